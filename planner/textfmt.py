"""Numbers and short texts for people, shared by the command line, the app, the fleet plan and the batch report (a
leaf module: it imports nothing of the planner)."""

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


# each objective's unit as people read it (plans, fleet plans, charts): energy is the facility's, at the meter
OBJECTIVE_UNITS_TEXT = {"energy": "kWh (facility)", "cost": "USD", "carbon": "kg CO2e", "time": "h"}


def objective_text(value: float) -> str:
    """An objective's value: whole units with thousands separators from 1,000 on (31,815,406; was 3.18154e+07),
    else 6 significant figures (527.04)."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.6g}"


def slot_ranges(slots: list[int]) -> str:
    """Slots as ranges: [3, 4, 5, 6, 7, 8, 9, 12] -> '3-9,12' (consecutive slots as 'first-last', runs joined by
    commas, ascending; '' for none). ``parse_slot_ranges`` reads it back."""
    runs: list[list[int]] = []
    for t in sorted(set(slots)):
        if runs and t == runs[-1][1] + 1:
            runs[-1][1] = t
        else:
            runs.append([t, t])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def parse_slot_ranges(text: str | int | float | None) -> list[int]:
    """'3-9,12' -> [3, 4, 5, 6, 7, 8, 9, 12]: the inverse of ``slot_ranges``, for a CSV cell read back (a column
    whose every cell is one slot comes back from ``pandas.read_csv`` as numbers unless read with ``dtype={"slots":
    str}``: 7 -> [7]; '', None or NaN -> [])."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return []
    if isinstance(text, int | float):
        return [int(text)]
    out: list[int] = []
    for part in text.split(",") if text.strip() else []:
        a, _, b = part.strip().partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


TRANSFORMER_FAMILIES = ("llm", "encoder")  # workload families whose FLOPs are mostly transformer linear layers
_NOT_IN_FP4 = {"cnn": "convolutions", "recsys": "embedding and feature-interaction layers"}


def precision_caveat(workload: str, family: str, precision: str) -> str | None:
    """What a plan computing a workload in a precision should say when no published training recipe backs it, else
    None. FP4 training is published for transformers only (NVFP4 / MXFP4 GEMMs of the linear layers: NVIDIA's MLPerf
    v5.1 Llama 3.1 405B runs, arXiv 2509.25149), yet the model applies the FP4 peak to every FLOP of the workload:
    for any other family (a CNN, a recommender) an extrapolation, said wherever such a plan is shown. FP8 is not
    noted: FP8 training is published beyond transformers (Micikevicius et al. 2022, arXiv 2209.05433, trains
    image-classification CNNs to baseline accuracy) -- how fast a framework runs it is the calibration's question."""
    if precision == "fp4" and family not in TRANSFORMER_FAMILIES:
        layers = _NOT_IN_FP4.get(family, "layers")
        return (
            f"{workload} computes in fp4 here, but FP4 training is published for transformers only (block-scaled "
            f"linear layers): no published recipe trains its {layers} in FP4, so this fp4 estimate extrapolates the "
            "FP4 GEMM rate to them and is likely optimistic; compare with bf16"
        )
    return None


COLOR_SCHEMES = {"tableau10": 10, "tableau20": 20}  # Vega's categorical schemes and how many colours each has


def color_scheme(n: int) -> str:
    """The Vega scheme that gives each of ``n`` categories a colour of its own (Vega's default, tableau10, repeats
    its colours past 10; past 20, colours spaced along a continuous rainbow)."""
    return next((k for k, size in COLOR_SCHEMES.items() if n <= size), "rainbow")
