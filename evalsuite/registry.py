"""One registry class for every kind of extension: tasks, models, feature maps, run analyses,
report sections and experiments.

A reference (``ref``) is one of
  * a registered name: ``"linear"``;
  * an importable attribute: ``"my_pkg.maps:CosFormer"``;
  * an attribute of a Python file: ``"path/to/maps.py:CosFormer"``.

Built-in entries live in modules that are imported on first use, so importing
``evalsuite.tasks`` stays cheap. Installed packages add entries through the
entry-point group ``evalsuite.plugins``: each entry point names a module (or a
callable) that registers what it provides when loaded.
"""
from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import pkgutil
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Callable, Iterable

from evalsuite.errors import UserError

ENTRY_POINT_GROUP = "evalsuite.plugins"


class UnknownName(UserError, LookupError):
    """A reference that names nothing; the message says what exists."""

    def __str__(self) -> str:  # LookupError quotes its argument; we want plain text
        return str(self.args[0])


_plugins_loaded = False


def load_plugins() -> None:
    """Load every ``evalsuite.plugins`` entry point once per process."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
            if callable(obj) and not isinstance(obj, type):
                obj()
        except (Exception, SystemExit) as exc:  # a broken plug-in must not take the suite down
            print(f"evalsuite: plug-in {ep.name!r} failed to load: {exc}", file=sys.stderr)


def file_ref(ref: object) -> tuple[Path, str] | None:
    """``(absolute path, attribute)`` when ``ref`` is a ``file.py:Attr`` reference, else None."""
    if not isinstance(ref, str) or ":" not in ref:
        return None
    target, _, attr = ref.rpartition(":")
    if not (target.endswith(".py") or "/" in target or "\\" in target):
        return None
    return Path(target).expanduser().resolve(), attr


def file_digest(path: Path) -> str:
    """SHA-256 of a plug-in file's contents: part of a run's identity, so an edit makes a new run."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load_file_attr(path: str, attr: str) -> Any:
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise UnknownName(f"file {path!r} does not exist")
    try:
        source = file.read_bytes()
    except OSError as exc:
        raise UnknownName(f"cannot read {path!r}: {exc.strerror}") from None
    # keyed by contents: an edited file is imported afresh, never served from an older import
    module_name = f"evalsuite_user_{hashlib.sha256(str(file).encode() + source).hexdigest()[:16]}"
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, file)
        if spec is None or spec.loader is None:
            raise UnknownName(f"cannot import {path!r} as a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's file: name it and the error in it
            # (a plug-in that calls sys.exit() at import is an import error, not the end of the command)
            del sys.modules[module_name]
            where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
            raise UnknownName(f"{path!r} failed to import: {type(exc).__name__}: {exc}{where}") from exc
    if not hasattr(module, attr):
        raise UnknownName(f"{path!r} defines no attribute {attr!r}")
    return getattr(module, attr)


def resolve_attr(ref: str) -> Any:
    """Resolve ``module:attr`` or ``file.py:attr``."""
    target, _, attr = ref.rpartition(":")
    if not target or not attr:
        raise UnknownName(f"reference {ref!r} should look like 'package.module:Attr' or 'file.py:Attr'")
    if file_ref(ref) is not None:
        return _load_file_attr(target, attr)
    try:
        module = importlib.import_module(target)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - ImportError, an error or sys.exit() in the user's module
        raise UnknownName(f"cannot import module {target!r} for {ref!r}: {type(exc).__name__}: {exc}") from exc
    if not hasattr(module, attr):
        raise UnknownName(f"module {target!r} has no attribute {attr!r}")
    return getattr(module, attr)


class Registry:
    """Maps names to objects of one kind (``kind`` is used in messages)."""

    def __init__(self, kind: str, builtin_modules: Iterable[str] = (), builtin_package: str | None = None):
        """``builtin_package``: every module of that package is imported on first use, so a new
        built-in entry is one new file."""
        self.kind = kind
        self._builtin_modules = list(builtin_modules)
        self._builtin_package = builtin_package
        self._builtins_loaded = False
        self._entries: dict[str, Any] = {}

    def register(self, name: str | None = None, *, obj: Any = None) -> Callable[[Any], Any]:
        """Decorator (``@REG.register("name")``) or direct call with ``obj=``."""

        def add(target: Any) -> Any:
            key = name or getattr(target, "name", None) or target.__name__
            existing = self._entries.get(key)
            if existing is not None and existing is not target and not _same_definition(existing, target):
                raise ValueError(f"{self.kind} {key!r} is already registered to {existing!r}")
            self._entries[key] = target
            return target

        return add(obj) if obj is not None else add

    def unregister(self, name: str) -> None:
        """Remove an entry (a test's throwaway, a plug-in withdrawn); no error when absent."""
        self._entries.pop(name, None)

    def _load(self) -> None:
        if not self._builtins_loaded:
            self._builtins_loaded = True
            modules = list(self._builtin_modules)
            if self._builtin_package:
                package = importlib.import_module(self._builtin_package)
                modules += [f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
            for module in modules:
                importlib.import_module(module)
        load_plugins()

    def names(self) -> list[str]:
        self._load()
        return sorted(self._entries)

    def items(self) -> list[tuple[str, Any]]:
        self._load()
        return sorted(self._entries.items())

    def __contains__(self, name: str) -> bool:
        self._load()
        return name in self._entries

    def get(self, ref: Any) -> Any:
        """Look up a name or resolve a ``module:attr`` / ``file.py:attr`` reference."""
        if not isinstance(ref, str):
            return ref  # already an object (a class or an instance)
        self._load()
        if ref in self._entries:
            return self._entries[ref]
        if ":" in ref:
            return resolve_attr(ref)
        raise UnknownName(self.unknown_message(ref))

    def unknown_message(self, ref: str) -> str:
        names = sorted(self._entries)
        close = difflib.get_close_matches(ref, names, n=3, cutoff=0.6)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        return (f"unknown {self.kind} {ref!r}.{hint} Available: {', '.join(names) or 'none'}"
                f" (or a 'package.module:Attr' / 'file.py:Attr' reference).")


def _same_definition(a: Any, b: Any) -> bool:
    # Re-importing a module (e.g. a file reference loaded twice) re-runs its decorators.
    return getattr(a, "__qualname__", None) == getattr(b, "__qualname__", None) and \
        getattr(a, "__module__", None) == getattr(b, "__module__", None)
