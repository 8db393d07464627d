"""A store on disk of the physics chunks `physics_chunks` (planner.plan.candidates) computes, so that a fresh
process (`planner solve` run again, a batch worker, the app after a restart) re-prices cached rows instead of
re-evaluating the model.

A chunk is stored under a hash of its in-memory key (the catalog's physics fingerprint, the request's physics
fields, the node counts) and of the planner's own code (every module of the package, hashed once per process): a
different catalog, request, planner version or Python / numpy / pandas version is a different file, so nothing is
ever read back stale. Files are
written to a temporary name and renamed (readers never see half a file); a file that cannot be read (truncated,
from another pandas) is dropped and recomputed; a directory that cannot be written is ignored. The store keeps at
most MAX_BYTES, the least recently used chunks dropped first.

Where: ``$PLANNER_CACHE_DIR``, else ``$XDG_CACHE_HOME/planner``, else ``~/.cache/planner``; ``PLANNER_CACHE_DIR=off``
turns it off. Files are Python pickles of pandas frames: only files this user owns are read, and the directory is
created private (0700).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

MAX_BYTES = 512 * 2**20  # the store's size limit (a chunk of ~250,000 configurations is ~13 MB)
_CODE: list[str] = []  # the code fingerprint, computed once


def directory() -> Path | None:
    """The store's directory, or None when turned off (PLANNER_CACHE_DIR=off or empty, or no home directory)."""
    given = os.environ.get("PLANNER_CACHE_DIR")
    if given is not None:
        return None if given.strip().lower() in ("", "off", "0", "none") else Path(given)
    try:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    except (RuntimeError, KeyError, OSError):  # no home directory to find
        return None
    return Path(base) / "planner"


def code_fingerprint() -> str:
    """A hash of every module of the planner package and of the Python, numpy and pandas versions: results of
    another version of any of them never match."""
    if not _CODE:
        h = hashlib.sha1(f"{sys.version_info[:3]} numpy {np.__version__} pandas {pd.__version__}".encode())
        package = Path(__file__).resolve().parent.parent
        for path in sorted(package.rglob("*.py")):
            h.update(str(path.relative_to(package)).encode())
            h.update(path.read_bytes())
        _CODE.append(h.hexdigest())
    return _CODE[0]


def _path(key: tuple[Any, ...]) -> Path | None:
    d = directory()
    if d is None:
        return None
    digest = hashlib.sha1(repr((code_fingerprint(), key)).encode()).hexdigest()
    return d / f"physics-{digest}.pkl"


def load(key: tuple[Any, ...]) -> pd.DataFrame | None:
    """The chunk stored under this key, or None (not stored, store off, or unreadable: then removed)."""
    path = _path(key)
    if path is None:
        return None
    try:
        if not path.is_file() or not _ours(path):
            return None
        with path.open("rb") as f:
            df = pickle.load(f)
        if not isinstance(df, pd.DataFrame):
            raise TypeError("not a frame")
    except PermissionError:  # a store we may not read: as no store
        return None
    except Exception:  # a truncated or foreign file: recompute (and drop it)
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # most recently used: kept longest
    return df


def save(key: tuple[Any, ...], df: pd.DataFrame) -> None:
    """Store the chunk (atomically: a temporary file renamed); any failure to write is ignored."""
    path = _path(key)
    if path is None:
        return
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # the user's own: see _ours
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".physics-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(df, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        _trim(path.parent)
    except OSError:
        return


def keeps(total_bytes: int) -> bool:
    """Whether chunks of ``total_bytes`` in all fit the store together (MAX_BYTES): a request's chunks are written
    only where they do -- its later chunks would push out its first ones, and a rerun reads the first ones first."""
    return total_bytes <= MAX_BYTES


def _ours(path: Path) -> bool:
    """The file belongs to this user (a pickle is code: never read one another user could have put there, should
    the store be pointed at a shared directory)."""
    getuid = getattr(os, "getuid", None)
    return getuid is None or path.stat().st_uid == getuid()


def _trim(d: Path) -> None:
    now = time.time()
    for tmp in d.glob(".physics-*.tmp"):  # left by a process killed mid-write (older than an hour)
        with contextlib.suppress(OSError):
            if now - tmp.stat().st_mtime > 3600:
                tmp.unlink()
    files = sorted(((p.stat().st_mtime, p.stat().st_size, p) for p in d.glob("physics-*.pkl")), reverse=True)
    total = 0
    for _, size, path in files:  # newest first: keep while within MAX_BYTES
        total += size
        if total > MAX_BYTES:
            with contextlib.suppress(OSError):
                path.unlink()
