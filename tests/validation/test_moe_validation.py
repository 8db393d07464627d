"""The MoE validation cases of reference/moe.md (planner/validation/moe.py): every row predicted, the stated fit
split, and the fitted parameters reproducing the fit rows."""

from __future__ import annotations

import math

from planner import load_catalog
from planner.validation.moe import MOE_FIT_ROWS, MOE_ROWS, moe_cases, moe_summary, moe_table


def test_every_moe_row_is_predicted_with_the_stated_split() -> None:
    cases = moe_cases(load_catalog())
    assert len(cases) == len(MOE_ROWS)
    assert all(math.isfinite(c.predicted) and c.predicted > 0 for c in cases)
    assert {c.inputs for c in cases if c.split == "fit"} == set(MOE_FIT_ROWS)
    assert sum(c.split == "test" for c in cases) == len(MOE_ROWS) - len(MOE_FIT_ROWS)
    table = moe_table(cases)
    assert list(table.columns) == ["case", "split", "unit", "published", "predicted", "error_pct"]
    assert set(moe_summary(cases)["split"]) == {"fit", "test"}


def test_the_fitted_parameters_reproduce_the_fit_rows_within_30_percent() -> None:
    """Within 15% but A21 without EP overlap, 28% slow: its published 19.7 s step leaves the exposed all-to-all of
    EP32 across four HGX H100 nodes at most ~8 s, faster than HybridEP's and DeepEP V2's measured inter-node
    bandwidths (moe.md section 2.2) carry it; the model follows the kernel measurements."""
    fit = [c for c in moe_cases(load_catalog()) if c.split == "fit"]
    assert max(abs(c.error) for c in fit) < 0.30
    assert sorted(abs(c.error) for c in fit)[-2] < 0.15
