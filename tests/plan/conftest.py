"""Fixtures of the single-job planning tests."""

from __future__ import annotations

from typing import Any

import pytest

from planner.plan import candidates


@pytest.fixture
def pricings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one entry per chunk priced from now on (its largest node count); nothing is kept
    priced before (candidates.price_chunk's cache emptied)."""
    counts: list[int] = []
    real = candidates._priced

    def counting(*args: Any) -> Any:
        counts.append(int(args[2]["nodes"].max()))
        return real(*args)

    candidates._PRICED.clear()
    monkeypatch.setattr(candidates, "_priced", counting)
    return counts
