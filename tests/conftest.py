from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path, monkeypatch):
    """Every test runs in its own folder, so default stores and reports never land in the repo."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVALSUITE_STORE", raising=False)
    yield


@pytest.fixture
def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


@pytest.fixture
def store_path(tmp_path) -> Path:
    return tmp_path / "store.db"
