"""Numbers for people, shared by the command line and the batch report (a leaf module: it imports nothing of
the planner)."""

from __future__ import annotations

import math


def sig4(v: float) -> str:
    """A model figure for people: 4 significant figures, written out with thousands separators from 0.001 to 10^15
    (25,670,000 kWh; 1,777 h; 8.308 samples/s), in exponent form only outside that range."""
    x = float(v)
    if not math.isfinite(x) or x == 0 or not 1e-3 <= abs(x) < 1e15:
        return f"{x:.4g}"
    r = float(f"{x:.4g}")
    if abs(r) >= 1000:
        return f"{r:,.0f}"
    decimals = max(3 - math.floor(math.log10(abs(r))), 0)
    return f"{r:.{decimals}f}".rstrip("0").rstrip(".") if decimals else f"{r:.0f}"


def switches_text(count: int) -> str:
    """'1 switch', '171 switches' (was '1 switches')."""
    return f"{count:,} switch" + ("" if count == 1 else "es")


COLOR_SCHEMES = {"tableau10": 10, "tableau20": 20}  # Vega's categorical schemes and how many colours each has


def color_scheme(n: int) -> str:
    """The Vega scheme that gives each of ``n`` categories a colour of its own (Vega's default, tableau10, repeats
    its colours past 10; past 20, colours spaced along a continuous rainbow)."""
    return next((k for k, size in COLOR_SCHEMES.items() if n <= size), "rainbow")
