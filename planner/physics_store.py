"""A store on disk of the physics chunks `optimize.physics_chunks` computes, so that a fresh process (`planner solve`
run again, a batch worker, the app after a restart) re-prices cached rows instead of re-evaluating the model.

A chunk is stored under a hash of its in-memory key (the catalog's physics fingerprint, the request's physics
fields, the node counts) and of the planner's own code (every module of the package, hashed once per process): a
different catalog, request or planner version is a different file, so nothing is ever read back stale. Files are
written to a temporary name and renamed (readers never see half a file); a file that cannot be read (truncated,
from another pandas) is dropped and recomputed; a directory that cannot be written is ignored. The store keeps at
most MAX_BYTES, the least recently used chunks dropped first.

Where: ``$PLANNER_CACHE_DIR``, else ``$XDG_CACHE_HOME/planner``, else ``~/.cache/planner``; ``PLANNER_CACHE_DIR=off``
turns it off. Files are Python pickles of pandas frames: read only what this user's planner wrote.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

MAX_BYTES = 512 * 2**20  # the store's size limit (a chunk of ~250,000 configurations is ~13 MB)
_CODE: list[str] = []  # the code fingerprint, computed once


def directory() -> Path | None:
    """The store's directory, or None when turned off (PLANNER_CACHE_DIR=off or empty)."""
    given = os.environ.get("PLANNER_CACHE_DIR")
    if given is not None:
        return None if given.strip().lower() in ("", "off", "0", "none") else Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "planner"


def code_fingerprint() -> str:
    """A hash of every module of the planner package: results of another version never match."""
    if not _CODE:
        h = hashlib.sha1()
        for path in sorted(Path(__file__).resolve().parent.glob("*.py")):
            h.update(path.name.encode())
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
    if path is None or not path.is_file():
        return None
    try:
        with path.open("rb") as f:
            df = pickle.load(f)
        if not isinstance(df, pd.DataFrame):
            raise TypeError("not a frame")
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
        path.parent.mkdir(parents=True, exist_ok=True)
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


def _trim(d: Path) -> None:
    files = sorted(((p.stat().st_mtime, p.stat().st_size, p) for p in d.glob("physics-*.pkl")), reverse=True)
    total = 0
    for _, size, path in files:  # newest first: keep while within MAX_BYTES
        total += size
        if total > MAX_BYTES:
            with contextlib.suppress(OSError):
                path.unlink()
