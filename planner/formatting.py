"""Numbers and short texts for people, shared by the command line, the app, the fleet plan and the batch report (a
leaf module: it imports nothing of the planner)."""

from __future__ import annotations

import math
import numbers
import operator
import re
from typing import SupportsIndex

import numpy as np


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


SLOT_RANGES_FORMAT = "'3-9,12' (slots 3 to 9 and 12: whole numbers >= 0, a run as first-last, runs ascending)"


def parse_slot_ranges(text: str | float | SupportsIndex | None) -> list[int]:
    """'3-9,12' -> [3, 4, 5, 6, 7, 8, 9, 12]: the inverse of ``slot_ranges``, for a CSV cell read back. A column
    whose every cell is one slot comes back from ``pandas.read_csv`` as numbers unless read with the id and text
    columns as text (``FLEET_CSV_TEXT_COLUMNS``), so one integer (a Python or NumPy one, or a whole float such as
    7.0) is that slot: 7 -> [7]; '', None or NaN -> []. Anything else -- a descending run ('3-1'), a negative
    slot ('-3'), an empty part ('3,,4'), runs out of order ('5,3') or not a number ('a', 7.5) -- raises a
    ValueError naming the text and the format."""
    if text is None:
        return []
    if isinstance(text, numbers.Real) and not isinstance(text, bool):  # a cell read back as a number
        if isinstance(text, numbers.Integral):
            slot = operator.index(text)  # exact, however large
        else:
            x = float(text)
            if math.isnan(x):  # an empty cell in a numeric column
                return []
            if not x.is_integer():  # (an infinity is not)
                raise ValueError(f"slots {text!r}: a slot is a whole number; expected {SLOT_RANGES_FORMAT}")
            slot = int(x)
        if slot < 0:
            raise ValueError(f"slots {text!r}: a slot is a whole number >= 0; expected {SLOT_RANGES_FORMAT}")
        return [slot]
    if not isinstance(text, str):
        raise ValueError(f"slots {text!r} ({type(text).__name__}): expected text such as {SLOT_RANGES_FORMAT}")
    out: list[int] = []
    for part in text.split(",") if text.strip() else []:
        run = re.fullmatch(r"\s*([0-9]+)\s*(?:-\s*([0-9]+)\s*)?", part)
        if not part.strip():
            raise ValueError(f"slots {text!r}: an empty part between commas; expected {SLOT_RANGES_FORMAT}")
        if run is None:
            raise ValueError(f"slots {text!r}: {part.strip()!r} is not a slot or a run; expected {SLOT_RANGES_FORMAT}")
        first, last = int(run[1]), int(run[2] or run[1])
        if last < first:
            raise ValueError(f"slots {text!r}: {part.strip()!r} is descending; expected {SLOT_RANGES_FORMAT}")
        if out and first <= out[-1]:
            raise ValueError(
                f"slots {text!r}: {part.strip()!r} does not come after slot {out[-1]}; expected {SLOT_RANGES_FORMAT}"
            )
        out.extend(range(first, last + 1))
    return out


# the columns of a fleet plan's tables (purchases.csv, jobs.csv, schedule.csv) that hold ids and text: read them back
# as text, pandas.read_csv(path, keep_default_na=False, dtype=dict.fromkeys(FLEET_CSV_TEXT_COLUMNS, str)), or a job
# id such as '007' or '1e3' comes back as the number 7 or 1000.0 and a slots column of single slots as integers
FLEET_CSV_TEXT_COLUMNS = (
    "job",
    "jobs",
    "model",
    "server",
    "gpu",
    "fabric",
    "pool",
    "kind",
    "layout",
    "precision",
    "precision_asked",
    "workload_family",
    "slots",
)


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


def ceil_sig(x: float, digits: int = 4) -> float:
    """x rounded up to `digits` significant figures (a stated minimum must suffice when typed back in)."""
    if x <= 0 or not math.isfinite(x):
        return x
    q = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    return math.ceil(x / q * (1 - 1e-12)) * q


def round_sig(x: float, digits: int = 3) -> float:
    """x rounded to ``digits`` significant figures (for display)."""
    if not np.isfinite(x) or x == 0:
        return float(x)
    return float(round(x, -int(np.floor(np.log10(abs(x)))) + digits - 1))
