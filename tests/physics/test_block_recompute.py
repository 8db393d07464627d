"""Block recomputation (Megatron-LM --recompute-method block --recompute-num-layers ceil(L_stage / 2)): half of each
pipeline stage's layers recomputed in full, the rest stored. Hand-derived memory, FLOPs and tensor-parallel traffic,
and the search's use of it where memory is tight."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.data import Configuration, Layout, load_catalog
from planner.errors import PlannerInputError
from planner.physics import communication as comm
from planner.physics import evaluate, step

CAT = load_catalog()


def test_half_the_layers_keep_their_input_only() -> None:
    """GPT-3 175B (s 2048, h 12288, 96 layers, FlashAttention), TP8 + SP, PP2 (48 layers a stage, 24 recomputed),
    micro-batch 1, bf16: a stored layer holds 34 s b h / t bytes, a recomputed one its input 2 s b h / t, so on
    average 18 s b h / t = 18 x 2048 x 12288 / 8 = 56.6 MB; a 1F1B first stage holds p micro-batches of L / p
    layers = 96 layers of one micro-batch: 5.436 GB."""
    wl = CAT.workload("gpt3-175b")
    lay = Layout(tensor_parallel=8, pipeline_parallel=2, sequence_parallel=True, recompute="block")
    assert step.recomputed_share(wl, lay) == 0.5
    got = float(step.activation_memory_gb(wl, lay, np.array([1.0]))[0])
    assert got == pytest.approx(18 * 2048 * 12288 / 8 * 96 / 1e9, rel=1e-12)


def test_an_odd_stage_recomputes_its_larger_half() -> None:
    """Llama 3 405B's 126 layers on 2 stages: 63 a stage, ceil(63 / 2) = 32 recomputed -- extra FLOPs 32/63 of the
    full recomputation's one forward pass (a third of the training FLOPs): factor 1 + 32 / 63 / 3."""
    wl = CAT.workload("llama3-405b")
    lay = Layout(tensor_parallel=8, pipeline_parallel=2, recompute="block")
    assert step.recomputed_share(wl, lay) == pytest.approx(32 / 63)
    assert step.recompute_factor(wl, lay) == pytest.approx(1 + 32 / 63 / 3)
    assert step.recompute_factor(wl, lay.model_copy(update={"recompute": "full"})) == pytest.approx(4 / 3)


def test_recomputed_layers_run_their_forward_collectives_again() -> None:
    """4 tensor-parallel all-reduces per layer and micro-batch, 2 more for a recomputed layer: half recomputed = 5."""
    per = comm.ring_allreduce_time_s(1e6, 4, 1e11, comm.INTRA_LATENCY_S)
    assert float(comm.tensor_parallel_time_s(1e6, 4, 10, 2, 0.5, 1e11)) == pytest.approx(per * 5 * 10 * 2)


def test_the_search_uses_it_where_storing_every_layer_does_not_fit() -> None:
    """Where the exact search (checked against every layout in tests/physics/test_space_properties.py) picks block
    recomputation, its layout storing every layer does not fit and recomputing every layer is slower. Some of
    these memory-tight LLM configurations must pick it, or the option is dead."""
    picked = 0
    for model, nodes in (("llama3-405b", 24), ("llama3-405b", 32), ("llama3-405b", 48), ("llama3-70b", 3)):
        cfg = Configuration(model=model, server="dgx-h100", nodes=nodes)
        best = evaluate(CAT, cfg)
        if not best.fits_memory or "half-recompute" not in best.layout:
            continue
        picked += 1
        chosen = _layout_of(best.layout)
        assert chosen.recompute == "block"
        stored = evaluate(CAT, cfg.model_copy(update={"layout": chosen.model_copy(update={"recompute": "none"})}))
        full = evaluate(CAT, cfg.model_copy(update={"layout": chosen.model_copy(update={"recompute": "full"})}))
        assert not stored.fits_memory, (model, nodes, best.layout)
        assert full.step_time_s > best.step_time_s, (model, nodes, best.layout)
    assert picked >= 1


def _layout_of(label: str) -> Layout:
    """The Layout of a label such as 'DP1 TP8 PP16 VP2 ZeRO-1 CP2 SP half-recompute' (Layout.label's parts)."""
    parts = label.split()
    num = {p.rstrip("0123456789"): int(p[len(p.rstrip("0123456789")) :]) for p in parts if p[-1].isdigit()}
    return Layout(
        tensor_parallel=num.get("TP", 1),
        pipeline_parallel=num.get("PP", 1),
        virtual_stages=num.get("VP"),
        zero_stage=num.get("ZeRO-", 0),
        context_parallel=num.get("CP", 1),
        sequence_parallel="SP" in parts,
        recompute="block" if "half-recompute" in parts else "full" if "recompute" in parts else "none",
    )


def test_block_recomputation_needs_transformer_layers() -> None:
    with pytest.raises(PlannerInputError, match="states no transformer layers"):
        evaluate(CAT, Configuration(model="resnet50", server="dgx-h100", nodes=1, layout=Layout(recompute="block")))
    assert math.isfinite(
        evaluate(
            CAT, Configuration(model="resnet50", server="dgx-h100", nodes=1, layout=Layout(recompute="full"))
        ).step_time_s
    )
