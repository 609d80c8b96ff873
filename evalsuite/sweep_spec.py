"""A sweep spec file (YAML or TOML) read and checked within bounds: its size, its values once YAML
aliases are expanded, its nesting, repeated keys, and its seeds and point count, before any point
is validated (``sweep.expand`` does that)."""
from __future__ import annotations

import math
import os
import tomllib
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from evalsuite.errors import UserError
from evalsuite.params import MAX_SEED


class SweepError(UserError):
    """An invalid spec or point; the message names the axis values."""


class SweepSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    base: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    points: list[dict[str, Any]] = Field(default_factory=list)
    seeds: list[StrictInt] = Field(default_factory=lambda: [0])  # `true` is not seed 1
    set: dict[str, Any] = Field(default_factory=dict)
    # an empty grid expands to the base itself, a run of its own; false: only the explicit points run
    # (a base of shared settings that is no configuration by itself, as an experiment's design declares)
    base_point: bool = True


MAX_SPEC_BYTES = 1 << 20  # a spec is a few lines; a megabyte is a mistake or an attack
MAX_SPEC_NODES = 100_000  # values after YAML aliases are expanded (an alias bomb has billions)
MAX_POINTS = 10_000  # runs in one sweep: about a week of CPU time at a minute each
MAX_SPEC_DEPTH = 32  # levels of nested lists and mappings (a spec needs four or five)


def nesting(text: str) -> int:
    """An upper bound on how deep a YAML or TOML text nests, counted without parsing it: the most
    brackets open at once plus the deepest indentation (in steps of one space), so that a text
    nested thousands deep is refused by arithmetic before a recursive parser sees it."""
    deepest = depth = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}" and depth:
            depth -= 1
    indent = max((len(line) - len(line.lstrip(" ")) for line in text.splitlines() if line.strip()), default=0)
    return deepest + (indent + 1) // 2


class UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that repeats a key (the plain loader keeps the last
    one silently, and a repeated ``grid`` drops the first's points)."""

    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} appears twice (lines {seen[key] + 1} and {key_node.start_mark.line + 1})",
                    key_node.start_mark)
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def load_spec(path: str | os.PathLike) -> SweepSpec:
    path = Path(path)
    if not path.is_file():
        raise SweepError(f"SPEC: no such file {path}")
    if path.stat().st_size > MAX_SPEC_BYTES:
        raise SweepError(f"SPEC {path}: {path.stat().st_size:,} bytes; a spec may have at most {MAX_SPEC_BYTES:,}")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SweepError(f"SPEC {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        depth = nesting(text)
        if depth > MAX_SPEC_DEPTH:
            raise SweepError(f"SPEC {path}: nested {depth} levels deep; a spec nests at most {MAX_SPEC_DEPTH}")
        data = tomllib.loads(text) if path.suffix == ".toml" else yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506
    except (yaml.YAMLError, tomllib.TOMLDecodeError) as exc:
        raise SweepError(f"SPEC {path}: not valid {'TOML' if path.suffix == '.toml' else 'YAML'}: {exc}") from None
    except RecursionError:
        raise SweepError(f"SPEC {path}: nested too deeply to read; a spec nests at most {MAX_SPEC_DEPTH} levels") from None
    if not isinstance(data, dict):
        raise SweepError(f"SPEC {path}: expected a mapping with base, grid, points, seeds, set")
    _check_size(data, path)
    try:
        spec = SweepSpec(**data)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors()[:10])
        raise SweepError(f"SPEC {path}: {problems} (allowed keys: name, base, grid, points, seeds, set)") from None
    for axis, values in spec.grid.items():
        if not values:
            raise SweepError(f"SPEC {path}: grid axis {axis!r} has no values")
    if not spec.seeds or any(not 0 <= s <= MAX_SEED for s in spec.seeds):
        raise SweepError(f"SPEC {path}: seeds must be a non-empty list of integers from 0 to {MAX_SEED}, "
                         f"got {spec.seeds!r}")
    count = math.prod(len(v) for v in spec.grid.values()) + len(spec.points)  # an empty grid: the base point (or none)
    if count * len(spec.seeds) > MAX_POINTS:
        raise SweepError(f"SPEC {path}: {count:,} points x {len(spec.seeds)} seeds = {count * len(spec.seeds):,} runs; "
                         f"a sweep may have at most {MAX_POINTS:,} (split it into several specs)")
    return spec


def _check_size(data: Any, path: Path) -> None:
    """Count values and levels as validation would see them (YAML aliases expanded), stopping at
    either limit (a chain of aliases nests deeper than the text does)."""
    seen, stack = 0, [(data, 1)]
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > MAX_SPEC_NODES:
            raise SweepError(f"SPEC {path}: more than {MAX_SPEC_NODES:,} values once YAML aliases are expanded; "
                             f"a sweep spec is a few axes and points")
        if depth > MAX_SPEC_DEPTH:
            raise SweepError(f"SPEC {path}: nested more than {MAX_SPEC_DEPTH} levels once YAML aliases are expanded")
        if isinstance(item, dict):
            stack.extend((x, depth + 1) for x in (*item.keys(), *item.values()))
        elif isinstance(item, (list, tuple)):
            stack.extend((x, depth + 1) for x in item)
