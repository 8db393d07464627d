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


def parse_slot_ranges(text: str | float | SupportsIndex | None) -> list[int]:  # noqa: C901 -- one validation per malformed form of the text, each with its own message
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


def precision_caveat(workload: str, family: str, precision: str, frozen_base: bool = False) -> str | None:
    """What a plan computing a workload in a precision should say when no published training recipe backs it, else
    None. FP4 training is published for transformers only (NVFP4 / MXFP4 GEMMs of the linear layers: NVIDIA's MLPerf
    v5.1 Llama 3.1 405B runs, arXiv 2509.25149), yet the model applies the FP4 peak to every FLOP of the workload:
    for any other family (a CNN, a recommender) an extrapolation, said wherever such a plan is shown. FP8 is not
    noted: FP8 training is published beyond transformers (Micikevicius et al. 2022, arXiv 2209.05433, trains
    image-classification CNNs to baseline accuracy) -- how fast a framework runs it is the calibration's question.

    A fine-tune of a frozen base (``frozen_base``: LoRA) in FP4 is published, but no faster than in FP8: MLPerf v5.1
    Llama 2 70B LoRA on B200, FP4 and FP8 submissions of one layout, stepped 0.97x the FP8 step on 8 GPUs and 1.07x
    on 32 (bench/mlperf_software_rounds.py, reference/mlperf_timing.csv and mlperf_settings.csv), where the model's
    FP4 GEMM rate (1.6x FP8's) gives about 0.7x: said as likely optimistic."""
    if precision == "fp4" and frozen_base and family in TRANSFORMER_FAMILIES:
        return (
            f"{workload} fine-tunes a frozen base in fp4 here: published FP4 LoRA runs (MLPerf v5.1, Llama 2 70B on "
            "B200) stepped no faster than FP8 runs of the same layout (0.97x and 1.07x), while this estimate gives "
            "fp4 the FP4 GEMM rate (about 0.7x the fp8 step), so it is likely optimistic; compare with fp8"
        )
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


# ------------------------------------------------------------------ amounts, durations, money, carbon and caps
def significant_text(x: float, digits: int = 4) -> str:
    """A number for people: ``digits`` significant figures with thousands separators, never an exponent between
    0.001 and 10^15 (1,555; 365,400; 9.79; 0.0123)."""
    v = round_sig(float(x), digits)
    if not math.isfinite(v):
        return str(v)
    if v == 0 or abs(v) >= 10 ** (digits - 1):
        return f"{v:,.0f}"
    decimals = max(digits - 1 - math.floor(math.log10(abs(v))), 0)
    text = f"{v:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if decimals else text


def number_text(x: float) -> str:
    """A number in an input field: every digit of its shortest exact form, thousands separators in its whole part
    (14,999,552,000,000; 35.128143; 0.5); ``parse_number`` reads it back to the same float."""
    v = float(x)
    if not math.isfinite(v):
        return str(v)
    if v.is_integer() and abs(v) < 1e21:
        return f"{int(v):,}"
    text = repr(v)
    if "e" in text:  # below 0.0001: the exponent form is the exact one
        return text
    sign, digits = ("-", text[1:]) if text.startswith("-") else ("", text)
    whole, _, frac = digits.partition(".")
    return f"{sign}{int(whole):,}.{frac}"


NUMBER_SEPARATORS = (",", "_", " ", "\u00a0", "\u202f", "'")  # thousands separators people type


def parse_number(text: str) -> float:
    """A number typed by a person: thousands separators (``,`` ``_``, spaces, ``'``) ignored, an exponent allowed
    (14,999,552,000,000 = 1.5e13 = 15_000_000_000_000 within float precision). ValueError naming the text when it
    is not a finite number."""
    clean = str(text).strip()
    for sep in NUMBER_SEPARATORS:
        clean = clean.replace(sep, "")
    try:
        value = float(clean)
    except ValueError:
        raise ValueError(f"{str(text).strip()!r} is not a number (e.g. 1.5e13 or 15,000,000,000,000)") from None
    if not math.isfinite(value):
        raise ValueError(f"{str(text).strip()!r} is not a finite number")
    return value


# a duration reads in minutes under an hour, in hours under a day, else in days: (unit, how many per day)
DURATION_UNITS = (("s", 86400.0, 1 / 1440), ("min", 1440.0, 1 / 24), ("h", 24.0, 1.0), ("days", 1.0, math.inf))


def duration_unit(days: float) -> tuple[str, float]:
    """The unit a duration of ``days`` (or a column whose longest is ``days``) reads in and how many of it make a
    day: ('s', 86400) under a minute, ('min', 1440) under an hour, ('h', 24) under a day, else ('days', 1)."""
    d = abs(float(days)) if math.isfinite(float(days)) else math.inf
    return next((unit, per_day) for unit, per_day, below in DURATION_UNITS if d < below)


def duration_text(days: float, digits: int = 3) -> str:
    """A duration for people, in the unit that reads: '12 s', '6.7 min', '3.2 h', '27.8 days'."""
    unit, per_day = duration_unit(days)
    return f"{significant_text(float(days) * per_day, digits)} {unit}"


TIME_TERM_NAMES = {"training": "training", "evaluation": "evaluation", "startup": "start-up"}


def time_terms_text(terms_h: dict[str, float]) -> str:
    """A time-to-train's named terms (hours, as ``Estimate.time_to_train_breakdown_h``) for people: 'training 17.3
    days + evaluation 1.13 h + start-up 30 min', in four figures as the total is written so the small terms stay
    visible in the sum; zero terms left out, empty for a run of training only."""
    if not any(terms_h.get(k) for k in ("evaluation", "startup")):
        return ""
    return " + ".join(f"{TIME_TERM_NAMES[k]} {duration_text(h / 24.0, 4)}" for k, h in terms_h.items() if h)


MONEY_CENTS_BELOW_USD = 10.0  # amounts under $10 keep their cents ($2.47); larger ones are whole dollars


def money_value(usd: float) -> float:
    """A dollar amount as a table shows it: to the cent under $10, else whole dollars."""
    x = float(usd)
    if not math.isfinite(x):
        return x
    return round(x, 2) if abs(x) < MONEY_CENTS_BELOW_USD else float(round(x))


def money_text(usd: float) -> str:
    """A dollar amount for people: '$0' for nothing, '$2.47' under $10, '$6,069,200' above."""
    x = money_value(usd)
    if not math.isfinite(x):
        return f"${x}"
    if x == 0:
        return "$0"  # nothing, not '$0.00'
    sign = "-" if x < 0 else ""
    return f"{sign}${abs(x):,.2f}" if abs(x) < MONEY_CENTS_BELOW_USD else f"{sign}${abs(x):,.0f}"


def carbon_text(kg: float, digits: int = 3) -> str:
    """Emissions for people: kilograms under a tonne ('0.247 kg CO2e', '412 kg CO2e'), else tonnes ('3,180 t
    CO2e')."""
    x = float(kg)
    if abs(x) >= 1000:
        return f"{significant_text(x / 1000, digits)} t CO2e"
    return f"{significant_text(x, digits)} kg CO2e"


def cap_text(fraction: float) -> str:
    """A GPU power cap (a fraction of TDP) as a share: 0.5 -> '50%', 0.45 -> '45%', 1.0 -> '100%'."""
    return f"{round_sig(100 * float(fraction), 3):g}%"
