"""Every file evalsuite writes goes through here.

* ``check_output``: an output path that is the results store (or its ``-wal``/``-shm``/``-journal``
  files, its ``weights/`` and ``incoming/`` folders), any other SQLite database, a weights file
  (torch's zip or pickle format), a folder, or anything that is not a regular file (a device, a
  pipe) or a symbolic link is refused (neither followed nor replaced); an existing file is refused
  unless the user said ``--overwrite``. ``atomic_write`` itself writes through a link (onto its
  target, the link stays), for files evalsuite names itself.
* ``atomic_write``: the content goes to a fresh temporary file in the target's folder (created
  with O_EXCL by ``tempfile.mkstemp``, so a planted symlink is never followed and two writers never
  share a name), is flushed, then renamed over the target. A reader sees the old file or the new
  one, never half of one; a failed write leaves the target as it was.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO, Callable

from evalsuite.errors import UserError

SQLITE_MAGIC = b"SQLite format 3\x00"
WEIGHTS_MAGIC = (b"PK\x03\x04", b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")  # torch.save: zip, or a pickle
STORE_FOLDERS = ("weights", "incoming")  # beside the store: trained weights, the crash journal
STORE_SIDECARS = ("", "-wal", "-shm", "-journal")


def is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def _head(path: Path, n: int = 16) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def check_output(path: str | os.PathLike, option: str, *, store: str | os.PathLike | None = None,
                 overwrite: bool = True) -> Path:
    """The output path, or ``UserError`` (exit 2) naming ``option`` when writing there could lose data."""
    if not str(path).strip():
        raise UserError(f"{option}: empty path")
    path = Path(path).expanduser()
    if path.is_symlink():
        raise UserError(f"{option}: {path} is a symbolic link (to {os.readlink(path)}); evalsuite neither follows nor "
                        f"replaces one: give the file itself")
    target = path.resolve()
    if store is not None:
        store_file = Path(store).resolve()
        for suffix in STORE_SIDECARS:
            if target == store_file.with_name(store_file.name + suffix):
                raise UserError(f"{option}: {path} is the results store{' (its ' + suffix[1:] + ' file)' if suffix else ''}; "
                                f"writing there would destroy every run in it. Choose another file.")
        for folder in STORE_FOLDERS:
            if store_file.parent / folder in target.parents:
                raise UserError(f"{option}: {path} is inside the store's {folder}/ folder; evalsuite writes only "
                                f"its own files there. Choose another file.")
    if target.is_dir():
        raise UserError(f"{option}: {path} is a folder; give a file name")
    if target.exists() and not target.is_file():
        raise UserError(f"{option}: {path} is not a regular file (a device, pipe or socket); give a file name")
    if target.exists() and is_sqlite(target):
        raise UserError(f"{option}: {path} is an SQLite database (a results store?); evalsuite never overwrites one")
    if target.exists() and _head(target).startswith(WEIGHTS_MAGIC):
        raise UserError(f"{option}: {path} is a weights file (torch format); evalsuite never overwrites one")
    if not overwrite and (path.exists() or path.is_symlink()):
        raise UserError(f"{option}: {path} exists; pass --overwrite to replace it")
    parent = target.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"{option}: {parent} is a file, not a folder, so {path} cannot be written there")
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{option}: cannot write to {path} (folder {parent} is not writable)")
    return path


def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], None]) -> Path:
    """Call ``write(file)`` on a fresh temporary file beside ``path``, then rename it into place
    (through a symlink: beside and onto its target, so the link stays a link)."""
    path = Path(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    # the temporary name stays legal wherever the target's is (a name has at most 255 bytes)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:100]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the usual mode
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename is None:  # a full disk or a failed flush names no file: name the one being written
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text(path: str | os.PathLike, text: str) -> Path:
    data = text.encode("utf-8")
    return atomic_write(path, lambda f: f.write(data))


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()
