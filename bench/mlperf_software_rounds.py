"""How much of an MLPerf steady step is the software release: the same GPU type, GPU count, global batch, layout and
precision published in two rounds, and the ratio of their steady steps.

The model has no term for a software release; its fitted efficiency comes from each GPU type's first round
(docs/VALIDATION.md). Where one GPU family's types first appear in different rounds (Blackwell: B200 in v5.0, B300
in v5.1), the family's fit mixes two releases, and a ratio here far from 1 bounds how close any physics can come on
both rounds at once. The second table is the same comparison between precisions inside one round (FP4 against FP8).
Sources: reference/mlperf_timing.csv (``step_time_s_med``: the steady step, evaluation excluded) and
reference/mlperf_settings.csv (layout and precision of each submission; rows without settings are left out).
Run: python bench/mlperf_software_rounds.py
"""

from __future__ import annotations

import pandas as pd

from planner.data import reference_dir

KEY = ["round", "submitter", "system", "benchmark"]
SAME = ["benchmark", "accelerator_family", "gpus", "global_batch", "layout"]


def steps() -> pd.DataFrame:
    """Every result folder's steady step with its layout ('TP1 PP1 CP8 DP9 mb1') and precision, where its settings
    are known."""
    ref = reference_dir(None)
    timing = pd.read_csv(ref / "mlperf_timing.csv")
    settings = pd.read_csv(ref / "mlperf_settings.csv")
    df = timing.merge(settings[[*KEY, "tp", "pp", "cp", "dp", "micro_batch", "precision"]], on=KEY, how="inner")
    df = df.dropna(subset=["tp", "pp", "cp", "dp", "micro_batch", "precision", "step_time_s_med"])
    df["layout"] = [
        f"TP{int(r.tp)} PP{int(r.pp)} CP{int(r.cp)} DP{int(r.dp)} mb{int(r.micro_batch)}" for r in df.itertuples()
    ]
    df["precision"] = df["precision"].str.split(" ").str[0]
    return df


def across_rounds(df: pd.DataFrame) -> pd.DataFrame:
    """Per (benchmark, GPU type, GPUs, batch, layout, precision) published in consecutive rounds: the median steady
    step of each round's submissions and the later round's over the earlier's."""
    med = df.groupby([*SAME, "precision", "round"])["step_time_s_med"].agg(["median", "size"]).reset_index()
    rows = []
    for key, g in med.groupby([*SAME, "precision"]):
        g = g.sort_values("round")
        for a, b in zip(g.itertuples(), g.iloc[1:].itertuples(), strict=False):
            rows.append(
                {
                    **dict(zip([*SAME, "precision"], key, strict=True)),
                    "rounds": f"{a.round} -> {b.round}",
                    "submissions": f"{a.size} / {b.size}",
                    "step_s": f"{a.median:.4g} -> {b.median:.4g}",
                    "ratio": round(b.median / a.median, 3),
                }
            )
    return pd.DataFrame(rows)


def across_precisions(df: pd.DataFrame) -> pd.DataFrame:
    """Per (round, benchmark, GPU type, GPUs, batch) published in FP4 and in FP8: the median steady step of each
    (at any layout: FP4 submissions chose their own) and FP4's over FP8's."""
    rows = []
    for key, g in df.groupby(["round", "benchmark", "accelerator_family", "gpus", "global_batch"]):
        by = g.groupby("precision")["step_time_s_med"].median()
        if "FP4" in by and "FP8" in by:
            layouts = {p: ", ".join(sorted(set(g.loc[g["precision"] == p, "layout"]))) for p in ("FP4", "FP8")}
            rows.append(
                {
                    **dict(zip(["round", "benchmark", "accelerator_family", "gpus", "global_batch"], key, strict=True)),
                    "fp8_s": round(float(by["FP8"]), 4),
                    "fp4_s": round(float(by["FP4"]), 4),
                    "ratio": round(float(by["FP4"] / by["FP8"]), 3),
                    "fp8_layouts": layouts["FP8"],
                    "fp4_layouts": layouts["FP4"],
                }
            )
    return pd.DataFrame(rows)


def main() -> None:
    df = steps()
    print("Same GPU type, GPUs, batch, layout and precision in two rounds: later steady step / earlier")
    print(across_rounds(df).to_markdown(index=False))
    print()
    print("FP4 against FP8 in one round, same GPU type, GPUs and batch: FP4 steady step / FP8")
    print(across_precisions(df).to_markdown(index=False))


if __name__ == "__main__":
    main()
