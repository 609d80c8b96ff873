"""The ``--set`` grammar: ``section.key=value`` (or a bare ``key=value`` when only one section has
that key), values read as JSON where they parse. Used by ``config.resolve`` and the commands that
take ``--set``."""
from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from evalsuite.errors import ConfigError, did_you_mean

SECTIONS = ("task", "model", "train")


MAX_VALUE_DEPTH = 32  # nested lists and objects in one --set value
MAX_VALUE_CHARS = 100_000


def parse_value(text: str, key: str = "") -> Any:
    """``--set`` values: JSON where it parses (numbers, true/false, null, lists), else the string.
    A value that starts like a JSON list, object or string must parse. Its size and nesting are
    bounded before it is parsed."""
    if len(text) > MAX_VALUE_CHARS:
        raise ConfigError(f"--set {key or text[:40]}: the value is {len(text):,} characters; at most {MAX_VALUE_CHARS:,}")
    depth = deepest = 0
    for ch in text:
        depth += ch in "[{"
        depth -= ch in "]}" and depth > 0
        deepest = max(deepest, depth)
    if deepest > MAX_VALUE_DEPTH:
        raise ConfigError(f"--set {key or text[:40]}: the value nests {deepest} levels; at most {MAX_VALUE_DEPTH}")
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError) as exc:
        if text.lstrip()[:1] in ("[", "{", '"'):
            raise ConfigError(f"--set {key or text}: the value {text!r} is not valid JSON ({exc})") from None
        return text


def split_assignment(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {text!r}: expected KEY=VALUE, e.g. --set train.lr=0.001")
    return key.strip(), value.strip()


def apply_overrides(sections: dict[str, dict], overrides: Iterable[str] | Mapping[str, Any], keys: dict[str, set[str]]) -> None:
    """Apply ``section.key=value`` (or an unambiguous bare ``key=value``) to ``sections`` in place.
    ``overrides``: command-line strings, or a mapping of keys to values already parsed. ``keys``:
    what each section accepts."""
    if isinstance(overrides, Mapping):
        items = list(overrides.items())
    else:  # command-line strings: parse the values
        items = [(k, parse_value(v, k)) for k, v in map(split_assignment, overrides)]
    for key, value in items:
        section, _, name = key.rpartition(".")
        if section:
            if section not in SECTIONS:
                raise ConfigError(f"--set {key}: unknown section {section!r}; use one of {', '.join(SECTIONS)}")
            if not keys[section]:
                takes = [s for s in SECTIONS if keys[s]]
                raise ConfigError(f"--set {key}: this command takes no {section} settings, only "
                                  + "; ".join(f"{s}.{{{', '.join(sorted(keys[s]))}}}" for s in takes))
            if name not in keys[section]:
                raise ConfigError(f"--set {key}: unknown key {name!r} in section {section!r}."
                                  f"{did_you_mean(name, keys[section])} Valid keys: {', '.join(sorted(keys[section]))}")
        else:
            owners = [s for s in SECTIONS if name in keys[s]]
            if not owners:
                valid = ", ".join(f"{s}.{k}" for s in SECTIONS for k in sorted(keys[s]))
                raise ConfigError(f"--set {key}: unknown key.{did_you_mean(name, [k for s in SECTIONS for k in keys[s]])}"
                                  f" Valid keys: {valid}")
            if len(owners) > 1:
                raise ConfigError(f"--set {key}: ambiguous, it is a key of {' and '.join(owners)}; "
                                  f"write {' or '.join(f'{s}.{name}' for s in owners)}")
            section = owners[0]
        sections[section][name] = value
