"""Host twins (planner/physics/space.py host_twins, on_twins): servers that differ only in their name, prices or
host power are one GPU board, evaluated once; each reads its twin's rows with its own IT power, and gets exactly
the table ``evaluate_space`` gives when every server is evaluated. The planner's physics chunks read them so
(planner/plan/candidates.py Twins), and are the same with twins as without, bit for bit."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import planner
from planner.physics import evaluate_space
from planner.physics.space import host_twins, on_twins, twin_rows
from planner.plan import PlanRequest, candidates

CAPS = [0.5, 0.7, 1.0]


@pytest.fixture(scope="module")
def board_copies() -> planner.Catalog:
    """The shipped catalog plus copies of dgx-h100 and of an A100 server under other prices, names and host power
    (CPU package, RAM, storage, board power, PSU efficiency, rack units), and copies that differ in a field the
    physics reads (CPU cores, storage bandwidth, NIC ports, the order of their fabrics): those are not twins."""
    cat = planner.load_catalog()
    h100 = cat.server("dgx-h100")
    a100 = cat.server("dgx-a100-80gb")
    host = {
        "price_usd": 2.0e5,
        "rent_usd_per_month": None,
        "cpu_power_w": 500.0,
        "ram_power_w": 90.0,
        "storage_power_w": 40.0,
        "other_power_w": 2500.0,
        "psu_efficiency": 0.9,
        "rack_units": 10,
        "name": "a twin",
    }
    copies = {
        "h100-twin": h100.model_copy(update={"id": "h100-twin", **host}),
        "h100-twin-2": h100.model_copy(update={"id": "h100-twin-2", "other_power_w": 0.0, "psu_efficiency": 0.99}),
        "a100-twin": a100.model_copy(update={"id": "a100-twin", **host}),
        "h100-few-cores": h100.model_copy(update={"id": "h100-few-cores", "cpu_cores": 8}),
        "h100-slow-disk": h100.model_copy(update={"id": "h100-slow-disk", "storage_read_gb_s": 0.05}),
        "h100-half-nics": h100.model_copy(update={"id": "h100-half-nics", "nic_ports": h100.nic_ports // 2}),
        "h100-fabrics-reversed": h100.model_copy(
            update={"id": "h100-fabrics-reversed", "fabrics": list(reversed(h100.fabrics))}
        ),
    }
    return cat.replace(servers={**cat.servers, **copies})


SERVERS = [
    "dgx-h100",
    "dgx-a100-80gb",
    "h100-twin",
    "h100-few-cores",
    "a100-twin",
    "h100-twin-2",
    "h100-slow-disk",
    "h100-half-nics",
    "h100-fabrics-reversed",
]


def test_twins_are_servers_equal_in_every_field_but_name_prices_and_host_power(board_copies: planner.Catalog) -> None:
    twin_of = host_twins([board_copies.server(s) for s in SERVERS])
    assert twin_of == [0, 1, 0, 3, 1, 0, 6, 7, 8]


@pytest.mark.parametrize("model", ["resnet50", "llama3-8b", "qwen3-30b-a3b"])
def test_every_server_read_through_its_twin_gets_the_table_evaluated_for_all(
    board_copies: planner.Catalog, model: str
) -> None:
    together = evaluate_space(board_copies, model, servers=SERVERS, caps=CAPS, nodes=range(1, 40), physical_only=True)
    twin_of = host_twins([board_copies.server(s) for s in SERVERS])
    firsts = [s for i, s in enumerate(SERVERS) if twin_of[i] == i]
    # the twins' table over more node counts than are read: rows picked by node count, as the planner does
    table = evaluate_space(board_copies, model, servers=firsts, caps=CAPS, nodes=range(1, 60), physical_only=True)
    rows = np.flatnonzero(table["nodes"].to_numpy() < 40)
    columns = [c for c in together.columns if c not in ("node_power_w", "energy_kwh")]
    idx, si = twin_rows(table, SERVERS, twin_of, rows)
    read = on_twins(board_copies, model, table, SERVERS, idx, si, columns)
    pd.testing.assert_frame_equal(read, together[columns], check_exact=True)


def test_columns_that_depend_on_the_host_and_are_not_recomputed_are_refused(board_copies: planner.Catalog) -> None:
    table = evaluate_space(board_copies, "llama3-8b", servers=["dgx-h100"], caps=CAPS, nodes=[1, 2], physical_only=True)
    with pytest.raises(ValueError, match="energy_kwh"):
        idx, si = twin_rows(table, ["dgx-h100", "h100-twin"], [0, 0], np.arange(len(table)))
        on_twins(board_copies, "llama3-8b", table, ["dgx-h100", "h100-twin"], idx, si, ["server", "energy_kwh"])


@pytest.mark.parametrize(
    ("model", "fabrics", "lo", "cached"),
    [("llama3-8b", None, 1, False), ("bert-large", None, 3, True), ("llama3-8b", ["ndr400", "hdr200"], 5, True)],
    ids=["every-chunk", "from-3-some-cached", "two-fabrics-from-5-some-cached"],
)
def test_the_planners_physics_chunks_are_the_same_with_twins_and_without(
    board_copies: planner.Catalog,
    model: str,
    fabrics: list[str] | None,
    lo: int,
    cached: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Chunks of a few node counts each, and six more twins of dgx-h100, so that one evaluation of the twins serves
    two or more chunks; with every third chunk already in memory where ``cached`` (a window then starts at the
    first chunk not cached). With twins, only the first server of each set of twins is evaluated."""
    monkeypatch.setenv("PLANNER_CACHE_DIR", "off")
    monkeypatch.setattr(candidates, "CHUNK_CONFIGS", 4_000)
    h100 = board_copies.server("dgx-h100")
    more = {
        f"h100-twin-{k}": h100.model_copy(update={"id": f"h100-twin-{k}", "price_usd": 1e5 * k}) for k in range(3, 9)
    }
    cat = board_copies.replace(servers={**board_copies.servers, **more})
    servers = [*SERVERS, *more]
    hi = 300
    req = PlanRequest(model=model, deadline_days=30, servers=servers, fabrics=fabrics, power_caps=CAPS, max_nodes=hi)
    evaluated: list[list[str]] = []
    real = candidates.evaluate_space

    def recorded(*args: object, **kwargs: object) -> pd.DataFrame:
        evaluated.append(list(kwargs["servers"]))  # type: ignore[call-overload]
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(candidates, "evaluate_space", recorded)

    def chunks(twins: bool) -> tuple[list[pd.DataFrame], dict[str, float]]:
        monkeypatch.setattr(candidates, "TWINS", twins)
        candidates.PHYSICS.clear()
        if cached:  # every third chunk computed by an earlier request
            earlier = list(candidates.physics_chunks(cat, req, lo, hi))
            keys = list(candidates.PHYSICS)
            candidates.PHYSICS.clear()
            for k in keys[::3]:
                candidates.PHYSICS[k] = earlier[keys.index(k)]
        evaluated.clear()
        timings: dict[str, float] = {}
        return list(candidates.physics_chunks(cat, req, lo, hi, timings)), timings

    without, t_without = chunks(False)
    assert {s for call in evaluated for s in call} == set(servers)
    with_twins, t_with = chunks(True)
    assert {s for call in evaluated for s in call} == set(servers) - {"h100-twin", "a100-twin", "h100-twin-2", *more}
    assert len(with_twins) == len(without) > 3
    assert len(evaluated) < len(with_twins) - (len(with_twins) // 3 + 1 if cached else 0)  # windows of chunks
    for a, b in zip(with_twins, without, strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert t_with["configurations"] == t_without["configurations"]
    candidates.PHYSICS.clear()


SHIPPED_BOARDS = ["dgx-h100", "dgx-a100-80gb", "gb200-nvl72", "mi300x-8", "l40s-4"]
HOST_FIELDS = {
    "price_usd": st.one_of(st.none(), st.floats(1e4, 1e6)),
    "rent_usd_per_month": st.one_of(st.none(), st.floats(1e3, 1e5)),
    "cpu_power_w": st.floats(100.0, 2000.0),
    "ram_power_w": st.floats(10.0, 500.0),
    "storage_power_w": st.floats(5.0, 200.0),
    "other_power_w": st.floats(0.0, 5000.0),
    "psu_efficiency": st.floats(0.8, 0.99),
    "rack_units": st.integers(1, 48),
}


@st.composite
def twin_requests(draw: st.DrawFn) -> tuple[dict[str, dict[str, object]], list[str], list[str] | None, int, int]:
    """Host copies of some shipped boards (each copy changes some host fields), the servers allowed (copies and
    boards shuffled), a fabric filter, and a range of node counts."""
    boards = draw(st.lists(st.sampled_from(SHIPPED_BOARDS), min_size=1, max_size=3, unique=True))
    copies: dict[str, dict[str, object]] = {}
    for b in boards:
        for k in range(draw(st.integers(1, 3))):
            changed = draw(st.dictionaries(st.sampled_from(sorted(HOST_FIELDS)), st.just(0), min_size=1))
            copies[f"{b}-copy-{k}"] = {"board": b, **{f: draw(HOST_FIELDS[f]) for f in changed}}
    servers = draw(st.permutations([*boards, *copies]))
    fabrics = draw(st.one_of(st.none(), st.just(["ndr400", "roce400", "hdr200"])))
    lo = draw(st.integers(1, 30))
    return copies, list(servers), fabrics, lo, lo + draw(st.integers(0, 60))


@settings(max_examples=8, deadline=None, derandomize=True)
@given(case=twin_requests())
def test_physics_chunks_of_any_host_copies_are_the_chunks_evaluated_server_by_server(
    board_copies: planner.Catalog, case: tuple[dict[str, dict[str, object]], list[str], list[str] | None, int, int]
) -> None:
    copies, servers, fabrics, lo, hi = case
    made = {
        sid: board_copies.server(str(c["board"])).model_copy(
            update={"id": sid, **{k: v for k, v in c.items() if k != "board"}}
        )
        for sid, c in copies.items()
    }
    cat = board_copies.replace(servers={**board_copies.servers, **made})
    req = PlanRequest(model="llama3-8b", deadline_days=30, servers=servers, fabrics=fabrics, power_caps=CAPS)
    old = (candidates.TWINS, candidates.CHUNK_CONFIGS, os.environ.get("PLANNER_CACHE_DIR"))
    os.environ["PLANNER_CACHE_DIR"] = "off"
    candidates.CHUNK_CONFIGS = 3_000  # a few counts a chunk: windows of the twins span chunks
    try:
        tables = {}
        for twins in (True, False):
            candidates.TWINS = twins
            candidates.PHYSICS.clear()
            tables[twins] = list(candidates.physics_chunks(cat, req, lo, hi))
    finally:
        candidates.TWINS, candidates.CHUNK_CONFIGS = old[0], old[1]
        if old[2] is None:
            os.environ.pop("PLANNER_CACHE_DIR", None)
        else:
            os.environ["PLANNER_CACHE_DIR"] = old[2]
        candidates.PHYSICS.clear()
    assert len(tables[True]) == len(tables[False])
    for a, b in zip(tables[True], tables[False], strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
