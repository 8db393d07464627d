"""The memory of a LoRA fine-tune (a frozen base, trainable adapters), each term against a hand-derived number.

Frozen weights are stored at the bytes of their stored precision: one byte in an FP8 or FP4 run whose framework
keeps FP8 parameters (Transformer Engine ``fp8_model_init``, NeMo ``fp8_params``), else the compute width
(memory.frozen_weight_bytes_per_param). A frozen linear layer without an adapter keeps no input for the backward
pass: its backward computes only dX = dY W^T (memory.frozen_linear_input_sbh). MLPerf's Llama 2 70B LoRA adapts the
fused QKV and the attention output projection; its FC1 and FC2 are frozen. With both, the 8 x H200 submissions'
layout, DP4 CP2 at micro-batch 1, fits 141 GB as it did in their runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.data import Catalog, Configuration, Layout, Workload, load_catalog
from planner.physics import evaluate, memory
from planner.validation.at_scale import their_fp8_activation, their_fp8_params, with_stored_precisions

CAT = load_catalog()
LORA = "llama2-70b-lora"
SBH = 8192 * 1 * 8192  # Llama 2 70B: s = 8,192 tokens, b = 1, h = 8,192: 67,108,864 elements
TRAINABLE = 44.6e6  # 80 layers x rank 16 x ((8,192 + 10,240) QKV + (8,192 + 8,192) projection) = 44.56e6


def test_frozen_weights_take_the_bytes_of_their_stored_precision() -> None:
    # one byte in an FP8 run that keeps FP8 parameters; the compute width otherwise (2 in BF16 or FP8 without FP8
    # parameters, 4 in fp32); the workload's own figure where it states one (QLoRA's NF4 base: 0.5)
    assert float(memory.frozen_weight_bytes_per_param(2.0, True, True)) == 1.0
    assert float(memory.frozen_weight_bytes_per_param(2.0, True, False)) == 2.0
    assert float(memory.frozen_weight_bytes_per_param(2.0, False, True)) == 2.0
    assert float(memory.frozen_weight_bytes_per_param(4.0, False, True)) == 4.0
    assert float(memory.frozen_weight_bytes_per_param(2.0, True, True, 0.5)) == 0.5
    rows = memory.frozen_weight_bytes_per_param(2.0, np.array([True, False]), True)
    assert rows.tolist() == [1.0, 2.0]


def test_69e9_frozen_parameters_in_fp8_take_69_gb() -> None:
    # 69e9 frozen x 1 byte = 69 GB, + 1e6 trainable x (2 weight + 2 gradient + 12 optimizer) = 0.016 GB
    got = memory.model_state_gb(69e9 + 1e6, 1e6, 16, 1, 1, 0, 2.0, 2.0, frozen_bytes_per_param=1.0)
    assert float(got) == pytest.approx(69.016, rel=1e-12)
    # in BF16 the same frozen weights take 138 GB; without frozen bytes given, every weight is at the 16-bit width
    bf16 = memory.model_state_gb(69e9 + 1e6, 1e6, 16, 1, 1, 0, 2.0, 2.0, frozen_bytes_per_param=2.0)
    assert float(bf16) == pytest.approx(138.016, rel=1e-12)
    assert float(memory.model_state_gb(69e9 + 1e6, 1e6, 16, 1, 1, 0, 2.0, 2.0)) == pytest.approx(138.016, rel=1e-12)
    # tensor parallelism splits the frozen weights like the others: 69 / 4 + 0.016 / 4
    assert float(memory.model_state_gb(69e9 + 1e6, 1e6, 16, 4, 1, 0, 2.0, 2.0, 1.0)) == pytest.approx(17.254)


def test_the_frozen_linear_layers_inputs_are_not_kept() -> None:
    # Korthikanti's GEMM inputs, s b h at 16 bits as (outside, inside the tensor-parallel regions): QKV (2, 0),
    # projection (0, 2), FC1 (2, 0), FC2 (0, 8). Adapters on QKV and projection: FC1 and FC2 frozen -> (2, 8)
    assert memory.frozen_linear_input_sbh(["qkv", "proj"], True) == (2.0, 8.0)
    assert memory.frozen_linear_input_sbh(["qkv", "proj"], False) == (2.0, 8.0)
    # a frozen projection: its input is the attention output, which FlashAttention keeps for its own backward pass
    assert memory.frozen_linear_input_sbh(["qkv"], False) == (2.0, 10.0)
    assert memory.frozen_linear_input_sbh(["qkv"], True) == (2.0, 8.0)
    # every linear layer trains, or carries an adapter: nothing freed
    assert memory.frozen_linear_input_sbh(None, True) == (0.0, 0.0)
    assert memory.frozen_linear_input_sbh(["qkv", "proj", "fc1", "fc2"], False) == (0.0, 0.0)


def test_one_llama2_70b_lora_layer_keeps_24_of_34_sbh() -> None:
    # one layer, s = b x 8,192, h = 8,192, t = 1, FlashAttention: 34 s b h = 2.2817 GB in BF16 with every layer
    # training; FC1 (2) and FC2 (8) frozen: 24 s b h = 1.6106 GB; in FP8 (GEMM inputs at one byte: 27 s b h) less the
    # FP8 FC1 (1) and FC2 (4) inputs: 22 s b h = 1.4764 GB; the activation function's 8 s b h input in FP8 as well:
    # 18 s b h = 1.2080 GB
    args = (8192, 8192, 64, 1, 1.0, 1, False, "none", True)
    adapters = ["qkv", "proj"]
    cases = {
        (False, None, False): 34,
        (False, tuple(adapters), False): 24,
        (True, None, False): 27,
        (True, tuple(adapters), False): 22,
        (True, tuple(adapters), True): 18,
        (False, tuple(adapters), True): 24,  # FP8 activation storage only in an FP8 run
    }
    for (fp8, linears, fp8_act), sbh in cases.items():
        got = memory.transformer_activation_gb(*args, fp8, linears, fp8_act)[()]
        assert got == pytest.approx(sbh * SBH / 1e9, rel=1e-12), (fp8, linears, fp8_act)
    # tensor parallel 2 without sequence parallelism: the frozen FC1 input is outside the TP region (10 - 2 = 8),
    # the FC2 input inside it (24 - 8 = 16): 8 + 16 / 2 = 16 s b h; in FP8 7 + 15 / 2 = 14.5 s b h
    tp2 = (8192, 8192, 64, 1, 1.0, 2, False, "none", True)
    assert memory.transformer_activation_gb(*tp2, False, adapters)[()] == pytest.approx(16 * SBH / 1e9)
    assert memory.transformer_activation_gb(*tp2, True, adapters)[()] == pytest.approx(14.5 * SBH / 1e9)
    # full recomputation keeps the layer input only, frozen layers or not: 2 s b h
    assert memory.transformer_activation_gb(8192, 8192, 64, 1, 1.0, 1, False, "full", True, True, adapters, True)[
        ()
    ] == pytest.approx(2 * SBH / 1e9)


def test_the_workload_states_its_adapters_and_fp8_storage() -> None:
    wl = CAT.workload(LORA)
    assert wl.adapter_linears == ["qkv", "proj"] and wl.trainable == pytest.approx(TRAINABLE)
    assert wl.fp8_frozen_weights and wl.fp8_activation_function_input and wl.frozen_bytes_per_param is None
    # rank 16 on the fused QKV (8,192 in, 8,192 + 2 x 1,024 out) and the projection (8,192 in and out), 80 layers
    assert pytest.approx(TRAINABLE, rel=1e-3) == 80 * 16 * ((8192 + 10240) + (8192 + 8192))
    with pytest.raises(ValueError, match="adapter_linears needs trainable_params"):
        Workload.model_validate({**wl.model_dump(), "trainable_params": None})


def _h200_lora(cat: Catalog, layout: Layout, precision: str = "fp8") -> tuple[float, bool]:
    config = Configuration(
        model=LORA, server="hgx-h200", nodes=1, global_batch=8, precision=precision, layout=layout, failures=False
    )
    est = evaluate(cat, config)
    return est.memory_per_gpu_gb, est.fits_memory


def _with(cat: Catalog, **update: object) -> Catalog:
    wl = cat.workload(LORA).model_copy(update=update)
    return cat.replace(workloads={**cat.workloads, wl.id: wl})


def test_the_8_h200_submissions_layout_fits() -> None:
    # DP4 CP2, micro-batch 1, distributed optimizer, FP8 (MLPerf v4.1-v5.1 8 x H200 LoRA). Per GPU, by hand:
    #   frozen weights (69e9 - 44.6e6) x 1 B = 68.955 GB; adapters 44.6e6 x (2 weight + 4 fp32 gradient) = 0.268 GB
    #   and 12 B of optimizer state / 8 (DP x CP) = 0.067 GB;
    #   activations 18 s b h x 80 layers / CP 2 = 48.318 GB; workspace 2 GB: 119.61 GB <= 0.95 x 141 = 133.95 GB
    dp4_cp2 = Layout(context_parallel=2, micro_batch=1, zero_stage=1)
    state = (69e9 - TRAINABLE) * 1.0 + TRAINABLE * (2.0 + 4.0) + TRAINABLE * 12.0 / 8
    activations = 18 * SBH * 80 / 2
    mem, fits = _h200_lora(CAT, dp4_cp2)
    assert mem == pytest.approx((state + activations) / 1e9 + 2.0, rel=1e-9) and fits
    assert mem == pytest.approx(119.61, abs=0.01)
    # without the activation function's input in FP8: 22 s b h, 59.056 GB of activations, 130.35 GB: still fits
    mem, fits = _h200_lora(_with(CAT, fp8_activation_function_input=False), dp4_cp2)
    assert mem == pytest.approx((state + 22 * SBH * 80 / 2) / 1e9 + 2.0, rel=1e-9) and fits
    # frozen weights in 16 bits (no FP8 parameters, or a BF16 run): 138 GB of weights alone, no fit
    _, fits = _h200_lora(_with(CAT, fp8_frozen_weights=False), dp4_cp2)
    assert not fits
    _, fits = _h200_lora(CAT, dp4_cp2, precision="bf16")
    assert not fits


def test_the_submissions_fp8_storage_settings_are_read() -> None:
    # reference/mlperf_settings.csv fp8_params / fp8_activation: 'True' or '1' on, '0' or 'False' off, unstated None
    assert their_fp8_params(pd.Series({"fp8_params": "True"})) is True
    assert their_fp8_params(pd.Series({"fp8_params": "0"})) is False
    assert their_fp8_params(pd.Series({"fp8_params": float("nan")})) is None
    assert their_fp8_activation(pd.Series({"fp8_activation": "1"})) is True
    assert their_fp8_activation(pd.Series({"fp8_activation": "False"})) is False
    assert their_fp8_activation(pd.Series(dtype=str)) is None
    config = Configuration(model=LORA, server="hgx-h200", nodes=1)
    assert with_stored_precisions(CAT, config, None, None) is CAT
    cat = with_stored_precisions(CAT, config, False, None)
    assert not cat.workload(LORA).fp8_frozen_weights and cat.workload(LORA).fp8_activation_function_input
    assert CAT.workload(LORA).fp8_frozen_weights


def test_the_8_b200_submissions_data_parallel_layout_fits() -> None:
    # DP8 at micro-batch 1 (MLPerf v5.0 8 x B200 LoRA, fp8_params and fp8_activation on): 69.29 GB of model state
    # (ZeRO-1 over 8) + 18 s b h x 80 layers = 96.64 GB of activations + 2 GB = 167.93 GB <= 0.95 x 180 = 171 GB
    config = Configuration(
        model=LORA,
        server="hgx-b200",
        nodes=1,
        global_batch=8,
        precision="fp8",
        layout=Layout(micro_batch=1, zero_stage=1),
        failures=False,
    )
    est = evaluate(CAT, config)
    state = (69e9 - TRAINABLE) * 1.0 + TRAINABLE * (2.0 + 4.0) + TRAINABLE * 12.0 / 8
    assert est.memory_per_gpu_gb == pytest.approx((state + 18 * SBH * 80) / 1e9 + 2.0, rel=1e-9)
    assert est.fits_memory
