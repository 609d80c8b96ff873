"""The layout's rules, checked on every import in the package (lazy ones inside functions
included): data flows one way, tasks -> models -> the core -> reports -> the CLI, and the folders
that install under ``evalsuite.*`` are never imported by their bare names."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# package -> folder in the checkout (pyproject.toml's package-dir)
ROOTS = {"evalsuite": ROOT / "evalsuite", "evalsuite.tasks": ROOT / "tasks", "evalsuite.models": ROOT / "models",
         "evalsuite.reports": ROOT / "reports"}
BARE = {"tasks", "models", "reports"}
SHARED = {"evalsuite.registry", "evalsuite.params", "evalsuite.errors", "evalsuite.files"}  # everyone may import these
LAYERS = ["tasks", "models", "core", "reports", "cli"]  # a module imports only from its own layer or those before it
FORBIDDEN = {  # importer prefix -> prefixes it may not import, though the layers allow them
    "evalsuite.reports": ("evalsuite.train", "evalsuite.pipeline", "evalsuite.reproduce", "evalsuite.sweep",
                          "evalsuite.executors"),
    "evalsuite.train": ("evalsuite.analysis", "evalsuite.pipeline", "evalsuite.store", "evalsuite.sweep",
                        "evalsuite.executors", "evalsuite.reproduce"),
    "evalsuite.analysis": ("evalsuite.train", "evalsuite.pipeline", "evalsuite.store", "evalsuite.reproduce"),
}


def modules() -> dict[str, Path]:
    """Every module of the package, by its installed name."""
    out = {}
    for package, folder in ROOTS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join([package, *parts])
            if package == "evalsuite" and parts and parts[0] in ("tasks", "models", "reports"):
                continue
            out[name] = path
    return out


MODULES = modules()


def layer(module: str) -> str:
    for prefix, name in (("evalsuite.tasks", "tasks"), ("evalsuite.models", "models"), ("evalsuite.reports", "reports"),
                         ("evalsuite.cli", "cli")):
        if module == prefix or module.startswith(prefix + "."):
            return name
    return "core"


def imports(name: str, path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` for every import in the file, relative ones resolved; ``from a import b``
    counts as importing ``a.b`` when that is a module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.append((node.lineno, full if full in MODULES else base))
    return out


def under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def violations() -> list[str]:
    found = []
    for name, path in MODULES.items():
        mine = layer(name)
        for line, target in imports(name, path):
            where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line} imports {target}"
            if target.split(".")[0] in BARE:
                found.append(f"{where}: a bare name; import evalsuite.{target}")
                continue
            if not under(target, "evalsuite") or target in SHARED:
                continue
            if target == "evalsuite":  # the package's public names (evalsuite.run): the core's
                target = "evalsuite.pipeline"
            if LAYERS.index(layer(target)) > LAYERS.index(mine):
                found.append(f"{where}: the {mine} layer may not import the {layer(target)} layer")
            for importer, banned in FORBIDDEN.items():
                if under(name, importer) and any(under(target, b) for b in banned):
                    found.append(f"{where}: {importer} may not import {target}")
    return found


def test_the_layers_import_only_from_their_left():
    assert violations() == []


def test_the_scan_sees_lazy_imports_and_catches_a_violation(tmp_path, monkeypatch):
    """The checker itself: a lazy import inside a function, in a report module, is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("def build():\n    from evalsuite.train import train_one\n    from . import plots\n")
    monkeypatch.setitem(MODULES, "evalsuite.reports.bad", bad)
    found = violations()
    assert any("bad.py:2 imports evalsuite.train" in v and "may not import" in v for v in found), found
    assert not any("plots" in v for v in found)


def test_no_file_imports_the_folders_by_their_bare_names():
    """From the repository root a bare ``import tasks`` would load the folder a second time (a
    second registry); nothing in the checkout does it, tests, benchmarks and examples included."""
    offenders = []
    for path in ROOT.rglob("*.py"):
        if any(part in (".venv", "build", ".git") or part.endswith(".egg-info") for part in path.parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] in BARE]
    assert offenders == []


@pytest.mark.parametrize("bare", sorted(BARE))
def test_a_bare_import_from_the_root_is_refused(bare):
    out = subprocess.run([sys.executable, "-c", f"import {bare}"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and f"import evalsuite.{bare}, not {bare}" in out.stderr


def test_every_module_is_under_its_size_limit():
    """No module over 400 lines; none over 300 in evalsuite.reproduce (one finding per file)."""
    too_long = [f"{name}: {n} lines" for name, path in MODULES.items()
                if (n := len(path.read_text().splitlines())) > (300 if under(name, "evalsuite.reproduce") else 400)]
    assert too_long == []


def circles() -> list[list[str]]:
    """Groups of modules that import each other, directly or through others (lazy imports included):
    the strongly connected components of the import graph with more than one module."""
    graph = {name: {t for _, t in imports(name, path) if t in MODULES and t != name} for name, path in MODULES.items()}
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
                on.discard(group[-1])
            if len(group) > 1:
                found.append(sorted(group))
    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_modules_import_each_other():
    """No import circle: a package's ``__init__`` that imports its modules never has them import it
    back (the CLI's group lives in ``cli/app.py``, the version in ``version.py``), and two modules
    never lean on each other (the capacity probes share ``analysis/probe_common.py``)."""
    assert circles() == []
