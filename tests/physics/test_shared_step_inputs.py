"""Servers that differ only in what the step time does not read (price, host power, name) are searched once
(step.distinct_rows): every configuration keeps exactly the figures it gets when its server is evaluated alone."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import planner
from planner.physics import evaluate_space, step
from planner.physics.space import grid_space, hardware_columns, server_rows
from planner.physics.tables import group_keys
from planner.physics.work import Work


@pytest.fixture(scope="module")
def twins() -> planner.Catalog:
    """The shipped catalog plus copies of dgx-h100 that differ in what the step does not read (price, host power)
    and in each thing it does: CPU cores and storage (the data pipeline), GPUs per node, NICs, and the GPU's power
    curve (the cap's slowdown, through a copy of the H100 on another curve)."""
    cat = planner.load_catalog()
    base = cat.server("dgx-h100")
    h100 = cat.gpu(base.gpu or "")
    other_curve = next(c for c in cat.power_curves if c != h100.power_curve)
    gpus = {
        **cat.gpus,
        "h100-other-curve": h100.model_copy(update={"id": "h100-other-curve", "power_curve": other_curve}),
    }
    changes = {
        "h100-twin": {"price_usd": base.price_usd * 0.8, "cpu_power_w": base.cpu_power_w * 1.3},
        "h100-half-nics": {"nic_ports": base.nic_ports // 2},
        "h100-few-cores": {"cpu_cores": 4},
        "h100-slow-disk": {"storage_read_gb_s": 0.05},
        "h100-4-gpus": {"gpus_per_node": 4, "nic_ports": 4},
        "h100-curve": {"gpu": "h100-other-curve"},
    }
    servers = {**cat.servers, **{k: base.model_copy(update={"id": k, **v}) for k, v in changes.items()}}
    return cat.replace(servers=servers, gpus=gpus)


TWINS = ["dgx-h100", "h100-twin", "h100-half-nics", "h100-few-cores", "h100-slow-disk", "h100-4-gpus", "h100-curve"]


@pytest.mark.parametrize("model", ["resnet50", "llama3-8b", "qwen3-30b-a3b"])
def test_a_server_searched_with_its_twins_gets_the_figures_it_gets_alone(twins: planner.Catalog, model: str) -> None:
    caps = [0.5, 0.7, 1.0]
    together = evaluate_space(twins, model, servers=TWINS, caps=caps, nodes=range(1, 33))
    for sid in TWINS:
        alone = evaluate_space(twins, model, servers=sid, caps=caps, nodes=range(1, 33))
        mine = together[together["server"] == sid].reset_index(drop=True)
        for col in mine.columns:
            if isinstance(mine[col].dtype, pd.CategoricalDtype):
                mine[col], alone[col] = mine[col].astype(str), alone[col].astype(str)
        pd.testing.assert_frame_equal(mine, alone, check_exact=True)


def test_twins_share_a_class_and_a_server_with_other_nics_shares_only_its_rows_without_the_fabric(
    twins: planner.Catalog,
) -> None:
    wl = twins.workload("llama3-8b")
    space, _ = grid_space(twins, ["dgx-h100", "h100-twin", "h100-half-nics"], None, [1.0], range(1, 5))
    servers = [twins.server(s) for s in space.server_ids]
    hw = hardware_columns(twins, space, servers, wl, wl.precision)
    ukey = hw.si.astype(np.int64) * 100 + hw.N
    _, u_of, first = group_keys(ukey)
    rows = server_rows(twins, wl, Work(None, None, None, True), False, hw, first)
    _, _, first_r = group_keys(ukey * (len(hw.fabrics) + 1) + hw.fi)
    fab = step.FabricRows(
        u=u_of[first_r],
        node_bytes_s=hw.node_bw[first_r],
        latency_s=hw.inter_lat[first_r],
        peer_bytes_s=np.where(hw.N > 1, hw.node_bw / hw.g, hw.intra_bw)[first_r],
        in_network=hw.per_fabric("in_network_reduction").astype(bool)[first_r],
    )
    _, rep_u, class_r, rep_r = step.distinct_rows(rows, fab, np.zeros(len(first)))
    # the node rows (server, nodes) of the three servers collapse to one class per node count: NICs are no input there
    assert len(rep_u) == 4
    # with the fabric, the twins share every row; the server with half the NICs has rows of its own beyond one node
    server_of_r = hw.si[first_r]
    twin_classes = {int(class_r[i]) for i in np.flatnonzero(np.isin(server_of_r, [0, 1]))}
    half_classes = {int(class_r[i]) for i in np.flatnonzero((server_of_r == 2) & (hw.N[first_r] > 1))}
    assert twin_classes.isdisjoint(half_classes)
    assert len(rep_r) < len(first_r)
    # row by row: each (nodes, fabric) row of dgx-h100 shares its class with the twin's
    key = {(int(hw.N[first_r[i]]), int(hw.fi[first_r[i]])): int(class_r[i]) for i in np.flatnonzero(server_of_r == 1)}
    pairs = [
        (key[(int(hw.N[first_r[i]]), int(hw.fi[first_r[i]]))], int(class_r[i]))
        for i in np.flatnonzero(server_of_r == 0)
    ]
    assert pairs and all(a == b for a, b in pairs)
