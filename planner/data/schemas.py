"""Validated, frozen schemas for everything that enters or leaves the model.

Every quantity carries its unit in its name (``power_w``, ``bandwidth_gbps``, ``price_usd``). All
models are strict: unknown fields are rejected (a typo in a catalog file is an error, not a silently
ignored column) and values are range-checked, so a bad file fails at load time with the field path.
"""

from __future__ import annotations

import typing
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_LIFE_YEARS = 15.0  # the longest service life a request may give bought or owned servers, years
MAX_STARTUP_S = 31_536_000.0  # the longest start-up a request may state: a year (a longer one is a unit mistake)
MAX_EVALUATION_SAMPLES = 1e12  # the most held-out samples one evaluation may state

# finite: a catalog or workload figure of .inf (YAML) is a typo, never "unlimited" (an infinite FP4 peak made the
# GEMMs take no time); pydantic says "Input should be a finite number"
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(gt=0, le=1)]
Precision = Literal["bf16", "fp16", "fp8", "fp4", "tf32", "fp32"]
Purchase = Literal["buy", "rent"]
WorkloadFamily = Literal["cnn", "encoder", "llm", "recsys"]
WORKLOAD_FAMILIES: tuple[str, ...] = typing.get_args(WorkloadFamily)


class Strict(BaseModel):
    """Base: frozen, unknown fields forbidden. The docstring under each field documents it for readers of this
    module; pydantic does not copy them into field descriptions (``use_attribute_docstrings`` parses this module's
    source when the classes are created: ~85 ms of every command's start, for descriptions nothing reads)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- hardware catalog
class PowerCapPoint(Strict):
    """One level of a power-cap curve: throughput and board power at a power limit, relative to TDP."""

    cap_fraction: Fraction
    """Power limit as a fraction of the GPU's TDP."""
    throughput_factor: Fraction
    """Throughput at this cap relative to throughput at TDP (1.0 at cap_fraction = 1)."""
    power_fraction: Fraction
    """Average board power under full training load at this cap, as a fraction of TDP."""


class PowerCapCurve(Strict):
    """Throughput and power of a GPU class against its power limit (catalog/power_caps.yaml, fitted by
    ``planner calibrate`` on the Zeus traces: planner/data/calibration.py)."""

    id: str
    """Identifier referenced by ``Gpu.power_curve``."""
    description: str
    """What was measured and how the curve was fit."""
    points: list[PowerCapPoint] = Field(min_length=2)
    """Levels sorted by cap_fraction; the last one must be cap_fraction = 1."""
    source: str
    """Where the measurements come from."""

    @model_validator(mode="after")
    def _sorted_and_ends_at_tdp(self) -> PowerCapCurve:
        caps = [p.cap_fraction for p in self.points]
        if caps != sorted(caps) or len(set(caps)) != len(caps):
            raise ValueError("points must be sorted by strictly increasing cap_fraction")
        if abs(caps[-1] - 1.0) > 1e-9:
            raise ValueError("the last point must be cap_fraction = 1.0 (the TDP)")
        tf = [p.throughput_factor for p in self.points]
        if tf != sorted(tf):
            raise ValueError("throughput_factor must not fall when the cap rises")
        return self


class Gpu(Strict):
    """An accelerator of catalog/gpus.yaml: peaks per precision, memory and its bandwidth, intra-node link, power
    limits and the power curve it follows, each figure with its source."""

    id: str
    """Catalog identifier (lower-case, dash separated)."""
    name: str
    """Marketing name."""
    vendor: Literal["nvidia", "amd", "intel"]
    """Vendor."""
    family: str
    """Architecture family (ampere, hopper, blackwell, ada, cdna3, ...): the calibration key."""
    bf16_tflops: Positive
    """Dense BF16 tensor throughput, TFLOP/s (no sparsity)."""
    fp8_tflops: Positive | None = None
    """Dense FP8 tensor throughput, TFLOP/s; null where the GPU has no FP8."""
    fp4_tflops: Positive | None = None
    """Dense FP4 tensor throughput (block-scaled NVFP4 / MXFP4 GEMMs), TFLOP/s; null where the GPU has no FP4."""
    memory_gb: Positive
    """Device memory, GB."""
    memory_bandwidth_tbps: Positive
    """Device memory bandwidth, TB/s."""
    tdp_w: Positive
    """Board power at the default limit (TDP), W."""
    min_power_limit_w: Positive
    """Lowest configurable power limit (nvidia-smi -pl), W."""
    max_power_limit_w: Positive
    """Highest configurable power limit, W."""
    idle_power_w: Positive
    """Board power while waiting on communication or data, W."""
    intra_node_bandwidth_gb_s: Positive
    """GPU-to-GPU bandwidth inside a node, GB/s per direction per GPU."""
    matmul_efficiency: Fraction
    """Measured best-shape matmul throughput / spec (reference/hardware.md)."""
    nvlink_sharp: bool = False
    """NVLink SHARP (NVLS): the NVSwitch reduces all-reduce data in the switch (Hopper and later with NVSwitch;
    NCCL >= 2.18)."""
    training_power_fraction: Annotated[float, Field(gt=0, le=1)] | None = None
    """Uncapped board power under dense training compute, as a fraction of TDP (the demand the power-cap curve is
    moved to); null = the demand of the curve's own measured loads."""
    power_curve: str
    """Id of the power-cap curve (power_caps.yaml) that applies to this GPU."""
    price_usd: NonNegative | None = None
    """Purchase price per GPU, USD (informational; servers carry their own price)."""
    rent_usd_per_gpu_hour: NonNegative | None = None
    """Public on-demand rent per GPU-hour, USD."""
    source: str
    """Source of the technical figures."""
    price_source: str = ""
    """Source of the price figures."""

    def allows_cap(self, cap: float) -> bool:
        """Whether the GPU's power limit can be set to ``cap`` (a fraction of TDP): within min_power_limit_w /
        tdp_w .. max_power_limit_w / tdp_w, with 1e-9 for rounding. The one rule for every entry point."""
        return self.min_power_limit_w / self.tdp_w - 1e-9 <= cap <= self.max_power_limit_w / self.tdp_w + 1e-9

    @model_validator(mode="after")
    def _limits(self) -> Gpu:
        if not self.min_power_limit_w <= self.tdp_w <= self.max_power_limit_w:
            raise ValueError("need min_power_limit_w <= tdp_w <= max_power_limit_w")
        if self.idle_power_w >= self.tdp_w:
            raise ValueError("idle_power_w must be below tdp_w")
        if self.fp8_tflops is not None and self.fp8_tflops < self.bf16_tflops:
            raise ValueError(
                f"fp8_tflops ({self.fp8_tflops:,g}) is below bf16_tflops ({self.bf16_tflops:,g}): FP8 tensor cores "
                "run at least BF16's rate (2x on Hopper, Ada, Blackwell and CDNA3/4): give the dense FP8 peak in "
                "TFLOP/s (2 PFLOP/s = 2000), or leave fp8_tflops out"
            )
        if self.fp4_tflops is not None and self.fp8_tflops is None:
            raise ValueError(
                "fp4_tflops is given but fp8_tflops is not: a GPU with FP4 tensor cores has FP8 ones too (Blackwell, "
                "MI350), and an fp4 run keeps its tensors and collectives in FP8 and falls back to fp8: give "
                "fp8_tflops too, or leave fp4_tflops out"
            )
        if self.fp4_tflops is not None and self.fp8_tflops is not None and self.fp4_tflops < self.fp8_tflops:
            raise ValueError(
                f"fp4_tflops ({self.fp4_tflops:,g}) is below fp8_tflops ({self.fp8_tflops:,g}): FP4 tensor cores run "
                "at least FP8's rate (2-3x on Blackwell and MI350): give the dense FP4 peak in TFLOP/s (10 PFLOP/s = "
                "10000), or leave fp4_tflops out"
            )
        return self


class Fabric(Strict):
    """A network between nodes (catalog/fabrics.yaml): port rate and achieved efficiency, latency, in-network
    reduction, switch radix, and the prices and power of its NICs, switches and cables."""

    id: str
    """Catalog identifier."""
    name: str
    """Human name."""
    kind: Literal["infiniband", "roce", "ethernet"]
    """Technology."""
    port_bandwidth_gbps: Positive
    """Line rate per port, Gb/s."""
    latency_us: Positive
    """Per-hop message latency, microseconds."""
    achieved_efficiency: Fraction
    """Fraction of line rate a tuned all-reduce achieves."""
    nic_price_usd: NonNegative
    """Price of one NIC port, USD."""
    nic_power_w: NonNegative
    """Power of one NIC port, W."""
    switch_radix: Annotated[int, Field(ge=4)]
    """Ports per switch."""
    switch_price_usd: NonNegative
    """Price of one switch, USD."""
    switch_power_w: NonNegative
    """Power of one switch, W."""
    cable_price_usd: NonNegative
    """Price of one cable (node-leaf or leaf-spine link), USD."""
    in_network_reduction: bool = False
    """Switches reduce all-reduce data in the network (InfiniBand SHARP, NCCL CollNet): each node sends its
    data once instead of 2(n-1)/n times."""
    source: str
    """Source of the figures."""


class Server(Strict):
    """A node type (catalog/servers.yaml): its GPUs, host (cores, power, storage), NIC ports, the fabrics it can
    use, and its purchase price or rent and billing period."""

    id: str
    """Catalog identifier."""
    name: str
    """Human name."""
    gpu: str | None
    """GPU id (gpus.yaml); null for CPU-only servers."""
    gpus_per_node: Annotated[int, Field(ge=0, le=72)]
    """GPUs per node (0 for CPU-only servers)."""
    cpu: str
    """CPU model(s)."""
    cpu_cores: Annotated[int, Field(ge=1)]
    """Physical CPU cores per node."""
    cpu_power_w: Positive
    """CPU package power with all cores busy, W (the model scales it by the busy cores, planner/physics/power.py)."""
    ram_gb: Positive
    """Host memory, GB."""
    ram_power_w: Positive
    """Host memory power, W."""
    storage_tb: Positive
    """Local NVMe capacity, TB."""
    storage_read_gb_s: Positive
    """Local storage sequential read bandwidth, GB/s."""
    storage_power_w: Positive
    """Storage power, W."""
    other_power_w: NonNegative
    """Board, fans, NVSwitches, BMC, W."""
    psu_efficiency: Annotated[float, Field(gt=0.5, le=1)]
    """Power-supply efficiency at typical load (DC out / AC in)."""
    nic_ports: Annotated[int, Field(ge=1, le=72)]
    """Compute-fabric ports per node."""
    max_nic_port_gbps: Positive
    """Fastest port the node's PCIe slots / NIC cages support, Gb/s."""
    fabrics: list[str] = Field(min_length=1)
    """Fabric ids this server can be built with."""
    intra_node: Literal["nvswitch", "pcie", "infinity-fabric", "none"]
    """How GPUs inside the node talk."""
    rack_units: Annotated[int, Field(ge=1)]
    """Height in rack units."""
    price_usd: NonNegative | None = None
    """Purchase price without compute-fabric NICs, USD; null if not for sale."""
    rent_usd_per_month: NonNegative | None = None
    """Rent for the node per month (730 h), including power and network, USD; null if not rentable."""
    rent_billing_period: Literal["hour", "day", "month"] = "hour"
    """Billing period of the rental offer: a run pays whole periods (a monthly offer used for 1.5 days costs one
    month); the price of one period is rent_usd_per_month x period hours / 730 (hour 1 h, day 24 h, month 730 h)."""
    power_cap_settable: bool = True
    """Whether a renter may set the GPU power limit (nvidia-smi -pl); when false, rented nodes run at TDP (cap 1.0).
    Bought servers always can."""
    source: str
    """Source of the technical figures."""
    price_source: str = ""
    """Source of the price figures."""

    @model_validator(mode="after")
    def _gpu_consistent(self) -> Server:
        if (self.gpu is None) != (self.gpus_per_node == 0):
            raise ValueError("a server has a gpu id exactly when gpus_per_node > 0")
        if self.price_usd is None and self.rent_usd_per_month is None:
            raise ValueError("give price_usd, rent_usd_per_month or both")
        return self


class Site(Strict):
    """Where the cluster runs (catalog/sites.yaml): electricity price, PUE and grid carbon intensity."""

    id: str
    """Catalog identifier."""
    name: str
    """Human name."""
    pue: Annotated[float, Field(ge=1.0, le=3.0)]
    """Power usage effectiveness (facility power / IT power)."""
    electricity_usd_per_kwh: NonNegative
    """Electricity price, USD/kWh."""
    carbon_kg_per_kwh: NonNegative
    """Grid carbon intensity, kgCO2e/kWh."""
    power_envelope_kw: Positive
    """Facility power available to the cluster, kW."""
    source: str
    """Source of the figures."""


class FrameworkProfile(Strict):
    """What a training framework runs (catalog/frameworks.yaml): the parallelisms and ZeRO stages it offers, how it
    reduces gradients, its overlap of communication and its per-step overhead."""

    id: str
    """Catalog identifier."""
    name: str
    """Human name."""
    overlap_fraction: Annotated[float, Field(ge=0, le=1)]
    """Share of the backward pass the gradient all-reduce can hide under."""
    step_overhead_ms: NonNegative
    """Fixed host overhead per optimizer step, ms."""
    tensor_parallel: bool
    """Supports tensor parallelism inside a node."""
    pipeline_parallel: bool
    """Supports pipeline parallelism."""
    max_zero_stage: Annotated[int, Field(ge=0, le=3)]
    """Highest ZeRO/FSDP sharding stage it supports (0 = plain data parallel)."""
    pipeline_max_zero_stage: Annotated[int, Field(ge=0, le=3)] | None = None
    """Highest ZeRO stage it runs together with pipeline parallelism (None: max_zero_stage)."""
    bucket_mb: Annotated[float, Field(gt=0)] = 25.0
    """Gradient bucket (fusion buffer) size, MB: gradients are all-reduced bucket by bucket as the backward
    pass produces them; each bucket pays the collective's latency once."""
    sequence_parallel: bool = False
    """Supports Megatron sequence parallelism (activations divided by TP across the whole layer)."""
    selective_recompute: bool = False
    """Supports selective (attention-only) activation recomputation."""
    pipeline_p2p_overlap: bool = False
    """Overlaps an interleaved pipeline's point-to-point sends and receives with the next chunk's compute
    (Megatron-Core ``overlap_p2p_comm``): only the transfers on the schedule's critical path are exposed
    (planner/physics/communication.py exposed_p2p_time_s)."""
    tp_overlap_fraction: Annotated[float, Field(ge=0, le=1)] = 0.0
    """Share of tensor- and context-parallel communication hidden under GEMMs (Megatron-Core
    --tp-comm-overlap, ring attention overlapping the KV exchange)."""
    context_parallel: bool = False
    """Supports context parallelism (the sequence split over GPUs, KV exchanged in a ring)."""
    expert_parallel: bool = False
    """Supports expert parallelism for Mixture-of-Experts models (Megatron-Core --expert-model-parallel-size)."""
    expert_all_to_all_overlap_fraction: Annotated[float, Field(ge=0, le=1)] = 0.0
    """Share of the MoE dispatch/combine all-to-all hidden under compute: 0 without overlap, Megatron-Core's 1F1B
    EP overlap (--overlap-moe-expert-parallel-comm) and DeepSeek's DualPipe hide most of it (reference/moe.md
    section 2.1)."""
    gradient_reduce_fp32: bool = False
    """Keeps and reduces bf16 (and FP8, whose parameters are bf16) training's gradients in fp32: 4 bytes per
    parameter in memory and on the wire (the distributed optimizer then all-gathers 16-bit parameters).
    Megatron-LM does so for bf16 (arguments.py: 'bfloat16 requires gradient accumulation and all-reduce to be
    done in fp32'); NeMo's recipes set grad_reduce_in_fp32."""
    source: str
    """Source."""


# --------------------------------------------------------------------------- workloads
class ConvergencePoint(Strict):
    """A knot of a workload's convergence curve: samples to converge at a global batch, relative to the reference
    batch's."""

    global_batch: Annotated[int, Field(ge=1)]
    """Global batch size."""
    samples_factor: Annotated[float, Field(ge=0.5, le=10)]
    """Samples to converge at this batch / samples at the reference batch."""


class MultiLatentAttention(Strict):
    """Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values through low-rank projections. Its
    dimensions set the attention FLOPs (planner/physics/moe.py ``megatron_flops_per_token``) and activations."""

    q_lora_rank: Annotated[int, Field(ge=1)] | None = None
    """Rank of the query down-projection (DeepSeek-V3: 1,536); null = queries projected directly."""
    kv_lora_rank: Annotated[int, Field(ge=1)]
    """Rank of the joint key/value down-projection (DeepSeek-V3: 512)."""
    qk_head_dim: Annotated[int, Field(ge=1)]
    """Query/key head dimension without rotary embedding (DeepSeek-V3: 128)."""
    qk_rope_head_dim: Annotated[int, Field(ge=0)]
    """Rotary query/key head dimension (DeepSeek-V3: 64)."""
    v_head_dim: Annotated[int, Field(ge=1)]
    """Value head dimension (DeepSeek-V3: 128)."""


Dispatcher = Literal["alltoall", "deepep", "hybridep"]


class MixtureOfExperts(Strict):
    """The Mixture-of-Experts shape of a transformer (Megatron-Core's MoE arguments): routed and shared experts,
    the dense layers, the router's top-k and the token dispatcher. FLOPs follow the active experts, memory all of
    them (planner/physics/moe.py; reference/moe.md sections 0 and 2)."""

    routed_experts: Annotated[int, Field(ge=2)]
    """Routed experts per MoE layer (--num-experts)."""
    top_k: Annotated[int, Field(ge=1)]
    """Routed experts each token is sent to (--moe-router-topk)."""
    expert_ffn_hidden: Annotated[int, Field(ge=1)]
    """FFN hidden size of one routed expert (--moe-ffn-hidden-size)."""
    shared_expert_ffn_hidden: Annotated[int, Field(ge=0)] = 0
    """FFN hidden size of all shared experts together (--moe-shared-expert-intermediate-size); 0 = none."""
    dense_ffn_hidden: Annotated[int, Field(ge=1)] | None = None
    """FFN hidden size of the dense (non-MoE) layers (--ffn-hidden-size); null where every layer is MoE."""
    first_k_dense: Annotated[int, Field(ge=0)] = 0
    """Leading layers with a dense FFN instead of experts (DeepSeek's first_k_dense_replace)."""
    moe_layer_frequency: Annotated[int, Field(ge=1)] = 1
    """Every n-th layer (after the dense ones) is an MoE layer (--moe-layer-freq)."""
    gated: bool = True
    """Gated FFN (SwiGLU: three weight matrices, 3/2 the FLOPs of a two-matrix FFN)."""
    head_dim: Annotated[int, Field(ge=1)] | None = None
    """Attention head dimension (--kv-channels); null = hidden / heads. Qwen3 uses 128 at any hidden size."""
    vocab_size: Annotated[int, Field(ge=1)]
    """Vocabulary (padded), for the embedding and logit FLOPs and parameters."""
    mtp_layers: Annotated[int, Field(ge=0)] = 0
    """Multi-token-prediction layers trained with the model (DeepSeek-V3: 1); each is an extra transformer layer
    and an extra logit."""
    mla: MultiLatentAttention | None = None
    """Multi-head latent attention dimensions; null = grouped-query attention from attention_heads / kv_heads."""
    capacity_factor: Annotated[float, Field(gt=0)] | None = None
    """Token-drop capacity factor (capacity = tokens x top_k x factor / experts); null = dropless."""
    dispatcher: Dispatcher = "alltoall"
    """Token dispatcher: NCCL all-to-all, DeepEP or HybridEP (their achieved bandwidths: planner/physics/moe.py)."""
    node_limit: Annotated[int, Field(ge=1)] | None = None
    """Largest number of nodes a token is routed to (DeepSeek-V3's node-limited routing: 4); null = no limit."""
    force_load_balance: bool = False
    """Routing forced to balance (Megatron's --moe-router-force-load-balancing, as every published benchmark
    runs); false = real routing, whose busiest expert rank is slower (planner/physics/moe.py
    ``load_imbalance_factor``)."""

    @model_validator(mode="after")
    def _consistent(self) -> MixtureOfExperts:
        if self.top_k > self.routed_experts:
            raise ValueError("top_k cannot exceed routed_experts")
        if self.first_k_dense and self.dense_ffn_hidden is None:
            raise ValueError("first_k_dense > 0 needs dense_ffn_hidden (the FFN size of the dense layers)")
        return self


class Workload(Strict):
    """A model to train (models/*.yaml): size, FLOPs and activation bytes per sample, transformer shape where it
    has one, framework and precision, batch policy, convergence curve and default amount of work."""

    id: str
    """Library identifier."""
    name: str
    """Human name."""
    family: WorkloadFamily
    """Workload family: the calibration key."""
    framework: str
    """Framework profile id (frameworks.yaml)."""
    params: Positive
    """Total parameters."""
    trainable_params: Positive | None = None
    """Trainable parameters (LoRA/adapters); null = all."""
    train_flops_per_sample: Positive
    """Model FLOPs per training sample, forward + backward, without recomputation."""
    sample_unit: Literal["image", "sequence", "example"]
    """What one sample is."""
    sequence_length: Annotated[int, Field(ge=1)] | None = None
    """Tokens per sequence (sequence models)."""
    layers: Annotated[int, Field(ge=1)] | None = None
    """Transformer layers (for tensor/pipeline-parallel communication)."""
    hidden_size: Annotated[int, Field(ge=1)] | None = None
    """Hidden size (for tensor/pipeline-parallel communication)."""
    precision: Precision
    """Default compute precision."""
    optimizer_bytes_per_param: Positive = 16.0
    """Bytes per trainable parameter for weights, gradients, master copy and optimizer moments."""
    frozen_bytes_per_param: Positive | None = None
    """Bytes per frozen parameter (LoRA base weights) where the run stores them in a format of its own (0.5 for
    QLoRA's 4-bit NF4 base); null = as the run's precision and ``fp8_frozen_weights`` store them
    (planner/physics/memory.py frozen_weight_bytes_per_param: 1 in FP8, else the compute width)."""
    fp8_frozen_weights: bool = True
    """In an FP8 or FP4 run, the frozen parameters are stored in FP8 only, one byte, no 16-bit copy (Transformer
    Engine ``fp8_model_init``, NeMo ``fp8_params``), as NeMo's LoRA recipe runs (MLPerf llama2_70b_lora submissions:
    reference/mlperf_settings.csv fp8_params); false = in 16 bits, for a framework that keeps no FP8 parameters.
    No effect on trainable parameters, or in BF16, FP16, TF32 or FP32."""
    adapter_linears: list[Literal["qkv", "proj", "fc1", "fc2"]] | None = None
    """With a frozen base (``trainable_params``): the linear layers of each transformer layer that carry trainable
    adapters (the LoRA target modules: qkv the fused query/key/value projection, proj the attention output
    projection, fc1 the MLP's up (and gate) projection, fc2 its down projection). The others keep no input for the
    backward pass (planner/physics/memory.py frozen_linear_input_sbh); null = every linear layer trains."""
    fp8_activation_function_input: bool = False
    """In an FP8 or FP4 run, the MLP activation function's input is kept for the backward pass in FP8 (Megatron-Core
    ``activation_func_fp8_input_store``, off by default; MLPerf's NeMo LoRA submissions turn it on:
    reference/mlperf_settings.csv fp8_activation). No effect in BF16, FP16, TF32 or FP32."""
    activation_bytes_per_sample: Positive
    """Activation memory per sample without recomputation, whole model, bytes."""
    recompute_activation_fraction: Fraction = 0.1
    """Share of activation memory kept when activations are recomputed (costs 1/3 more compute)."""
    embedding_params: NonNegative = 0.0
    """Model-parallel embedding parameters (recommenders): sharded over all GPUs, never all-reduced."""
    embedding_bytes_per_param: NonNegative = 4.0
    """Bytes of state per embedding parameter (weights + optimizer)."""
    embedding_exchange_bytes_per_sample: NonNegative = 0.0
    """All-to-all bytes per sample for embedding lookups (forward + backward)."""
    micro_batch: Annotated[int, Field(ge=1)] | None = None
    """Fixed micro-batch per GPU (pipeline workloads); null = the local batch, split by accumulation."""
    min_samples_per_gpu: Annotated[int, Field(ge=1)] = 1
    """Smallest per-GPU batch per step; the global batch grows to keep every GPU at least this busy."""
    efficiency_half_batch: Positive
    """Per-GPU micro-batch at which kernels reach half their peak efficiency."""
    default_global_batch: Annotated[int, Field(ge=1)]
    """Global batch used when none is given."""
    dataset_samples: Positive | None = None
    """Samples in one epoch (for --epochs)."""
    default_samples: Positive
    """Samples to train at the reference batch (the default amount of work)."""
    reference_global_batch: Annotated[int, Field(ge=1)]
    """Global batch at which default_samples was measured."""
    convergence: list[ConvergencePoint] = Field(default_factory=list)
    """How samples-to-converge grow with global batch (piecewise linear in log batch)."""
    data_bytes_per_sample: NonNegative = 0.0
    """Bytes read from storage per sample."""
    cpu_core_ms_per_sample: NonNegative = 0.0
    """CPU core-milliseconds of preprocessing per sample."""
    attention_heads: Annotated[int, Field(ge=1)] | None = None
    """Attention heads (transformers): activation memory per layer as Megatron computes it (Korthikanti et al.
    2022) instead of activation_bytes_per_sample."""
    kv_heads: Annotated[int, Field(ge=1)] | None = None
    """Key/value heads (grouped-query attention); null = attention_heads. Sets the context-parallel KV volume."""
    flash_attention: bool = True
    """The attention kernel recomputes softmax scores in the backward pass (FlashAttention), so the s^2 score
    matrices are never stored and selective recomputation adds nothing."""
    fp8_attention: bool = False
    """In an FP8 or FP4 run, attention's score and context GEMMs run in FP8 (Transformer Engine ``fp8_dpa``, NeMo
    ``fp8_dot_product_attention``); off (Transformer Engine's default) they run in BF16, as NVFP4 recipes leave them
    outside FP4 either way (planner/physics/compute.py attention_precision). No effect in BF16, FP16, TF32 or FP32."""
    max_global_batch_tokens: Positive | None = None
    """Largest global batch (tokens per step) the recipe trains at without extra tokens to the same loss; plans
    never exceed it (beyond the critical batch, tokens to the same loss grow: McCandlish et al. 2018)."""
    max_global_batch: Positive | None = None
    """Largest global batch (samples per step) with a published convergence point: the convergence curve says
    how many more samples a larger batch trains up to here, and nothing beyond, so plans never exceed it; more
    data-parallel replicas than min_samples_per_gpu allows at this batch train smaller micro-batches."""
    moe: MixtureOfExperts | None = None
    """The Mixture-of-Experts shape (routed and shared experts, dense layers, dispatcher); null for a dense model.
    ``params`` is then the total (memory), ``train_flops_per_sample`` the active experts' (compute)."""
    source: str
    """Where the figures come from."""
    notes: str = ""
    """Derivations and caveats."""

    @model_validator(mode="after")
    def _consistent(self) -> Workload:
        if self.trainable_params is not None and self.trainable_params > self.params:
            raise ValueError("trainable_params cannot exceed params")
        if self.adapter_linears is not None and self.trainable_params is None:
            raise ValueError("adapter_linears needs trainable_params (the adapters of a frozen base)")
        if self.adapter_linears is not None and (
            self.moe is not None or not (self.layers and self.hidden_size and self.sequence_length)
        ):
            raise ValueError(
                "adapter_linears is modelled for dense transformers (layers, hidden_size, sequence_length) only: "
                "leave it out (every linear layer then keeps its input)"
            )
        batches = [c.global_batch for c in self.convergence]
        if batches != sorted(batches):
            raise ValueError("convergence points must be sorted by global_batch")
        if self.moe is not None and not (self.layers and self.hidden_size and self.attention_heads):
            raise ValueError("a workload with a moe block states its layers, hidden_size and attention_heads")
        if self.moe is not None and self.layers is not None and self.moe.first_k_dense >= self.layers:
            raise ValueError("moe.first_k_dense must leave at least one MoE layer")
        return self

    @property
    def trainable(self) -> float:
        """Parameters that train: ``trainable_params`` where given (LoRA), else all of them."""
        return self.trainable_params if self.trainable_params is not None else self.params


# --------------------------------------------------------------------------- configurations
# --------------------------------------------------------------------------- calibration (catalog/calibration.yaml)
OverlapFraction = Annotated[float, Field(ge=0, le=1)]


class CalibrationReference(Strict):
    """A GPU family whose fitted MFU stands in for families without a fit, scaled by matmul efficiency."""

    family: str
    """GPU family whose fitted MFU a family without a fit borrows."""
    matmul_efficiency: Positive
    """That family's measured matmul efficiency (the borrowed MFU is scaled by gpu / reference)."""


class CalibrationFile(BaseModel):
    """The keys of catalog/calibration.yaml the model reads (planner/physics/compute.py, planner/physics/space.py), each
    type- and range-checked when the catalog is loaded; other keys are kept (a fit may add its own), but a known
    key of the wrong type, out of range or naming an unknown workload family is an error naming the key and the
    valid values, not a value silently ignored or an internal error deep in the model."""

    model_config = ConfigDict(extra="allow", frozen=True)
    mfu: dict[str, dict[WorkloadFamily, Fraction]] = Field(default_factory=dict)
    """Achievable MFU at a large micro-batch per GPU family x workload family, in (0, 1]."""
    default_mfu: dict[WorkloadFamily, Fraction] = Field(default_factory=dict)
    """Unvalidated MFU estimates per workload family, in (0, 1]."""
    fallback_references: list[CalibrationReference] = Field(default_factory=list)
    """GPU families whose fit a family without one borrows, in order."""
    fp8_efficiency_ratio: Fraction | None = None
    """GEMM MFU against the FP8 peak relative to BF16's, in (0, 1] (above 1 a plan's MFU could pass 100%)."""
    fp4_efficiency_ratio: Fraction | None = None
    """GEMM MFU against the FP4 peak relative to FP8's, in (0, 1]."""
    half_batch_scale: Positive | None = None
    """Scale of the efficiency_half_batch of the families below."""
    half_batch_scale_families: list[WorkloadFamily] | None = None
    """Workload families the half-batch scale was fitted on (some of cnn, encoder, llm, recsys)."""
    overlap: dict[str, OverlapFraction] = Field(default_factory=dict)
    """Per framework id: share of the backward pass hiding the gradient all-reduce, in [0, 1]."""
    tp_overlap: dict[str, OverlapFraction] = Field(default_factory=dict)
    """Per framework id: share of tensor-parallel communication hidden under GEMMs, in [0, 1]."""
    gemm_tokens_half: NonNegative | None = None
    """GEMM shape efficiency: tokens per micro-batch at half efficiency (0 = off)."""
    gemm_width_half: NonNegative | None = None
    """GEMM shape efficiency: hidden width per tensor-parallel rank at half efficiency (0 = off)."""

    @field_validator(
        "mfu",
        "default_mfu",
        "fallback_references",
        "fp8_efficiency_ratio",
        "fp4_efficiency_ratio",
        "half_batch_scale",
        "half_batch_scale_families",
        "overlap",
        "tp_overlap",
        "gemm_tokens_half",
        "gemm_width_half",
        mode="before",
    )
    @classmethod
    def _not_null(cls, v: object) -> object:
        """A key may be left out (the model then uses its default) but not given empty: ``fp8_efficiency_ratio:``
        with no value reads as null, which the model cannot compute with."""
        if v is None:
            raise ValueError("is empty (null): give it a value, or remove the key to use the model's default")
        return v


class Layout(Strict):
    """A parallel layout: tensor, pipeline (and virtual stages) and context parallelism -- data parallelism is
    what the GPUs leave --, sequence parallelism, ZeRO stage, recomputation, gradient accumulation and micro-batch."""

    tensor_parallel: Annotated[int, Field(ge=1)] = 1
    """Tensor-parallel degree (inside a node)."""
    pipeline_parallel: Annotated[int, Field(ge=1)] = 1
    """Pipeline stages."""
    zero_stage: Annotated[int, Field(ge=0, le=3)] = 0
    """ZeRO/FSDP sharding stage over the data-parallel group."""
    recompute: Literal["none", "selective", "block", "full"] = "none"
    """Activation recomputation: none, selective (attention only; Korthikanti et al. 2022), block (full
    recomputation of half the layers of each pipeline stage, the other half stored: Megatron's
    --recompute-method block --recompute-num-layers ceil(L_stage / 2)) or full (every layer's activations from its
    input; one extra forward pass). true/false read as full/none."""
    sequence_parallel: bool = False
    """Megatron sequence parallelism: activations outside the tensor-parallel GEMMs are split over TP too."""
    context_parallel: Annotated[int, Field(ge=1)] = 1
    """Context-parallel degree: each sequence split over this many GPUs (GPUs = TP x CP x PP x DP)."""
    micro_batch: Annotated[int, Field(ge=1)] | None = None
    """Micro-batch per GPU, samples; null = the workload's (or, where it fixes none, the local batch split by
    the accumulation steps the search chooses)."""
    accumulation: Annotated[int, Field(ge=1)] = 1
    """Gradient-accumulation steps (data-parallel workloads without a fixed micro-batch)."""
    expert_parallel: Annotated[int, Field(ge=1)] = 1
    """Expert-parallel degree (Mixture-of-Experts): each MoE layer's routed experts split over this many GPUs of a
    pipeline stage, folded with TP x CP x DP as Megatron-Core's parallel folding does (EP x ETP divides TP x CP x
    DP, the expert data-parallel degree is TP x CP x DP / (EP x ETP))."""
    expert_tensor_parallel: Annotated[int, Field(ge=1)] = 1
    """Expert tensor-parallel degree (Mixture-of-Experts, Megatron-Core --expert-tensor-parallel-size): each routed
    expert's FFN split over this many GPUs, which gather the expert's tokens; 1 (Megatron-Core's advice for
    fine-grained experts) or the attention TP (its default)."""
    virtual_stages: Annotated[int, Field(ge=1)] | None = None
    """Interleaved pipeline: model chunks per GPU (Megatron's virtual pipeline stages); None = the fastest of
    1, 2, 4, 8 for each configuration."""

    @field_validator("recompute", mode="before")
    @classmethod
    def _recompute_bool(cls, v: object) -> object:
        return {True: "full", False: "none"}.get(v, v) if isinstance(v, bool) else v

    @model_validator(mode="after")
    def _virtual_needs_a_pipeline(self) -> Layout:
        if self.virtual_stages is not None and self.virtual_stages > 1 and self.pipeline_parallel == 1:
            raise ValueError("virtual_stages > 1 needs pipeline_parallel > 1 (they interleave pipeline stages)")
        return self

    def label(self, data_parallel: int) -> str:  # noqa: C901 -- a flat list of independent layout parts, each appended when set
        """The layout as text at a data-parallel degree, e.g. 'DP16 TP8 PP4 VP2 ZeRO-1': only the parallelisms
        above 1 and the options that are set."""
        parts = [f"DP{data_parallel}"]
        if self.tensor_parallel > 1:
            parts.append(f"TP{self.tensor_parallel}")
        if self.pipeline_parallel > 1:
            parts.append(f"PP{self.pipeline_parallel}")
            if self.virtual_stages and self.virtual_stages > 1:
                parts.append(f"VP{self.virtual_stages}")
        if self.zero_stage:
            parts.append(f"ZeRO-{self.zero_stage}")
        if self.context_parallel > 1:
            parts.append(f"CP{self.context_parallel}")
        if self.expert_parallel > 1:
            parts.append(f"EP{self.expert_parallel}")
        if self.expert_tensor_parallel > 1:
            parts.append(f"ETP{self.expert_tensor_parallel}")
        if self.sequence_parallel and self.tensor_parallel > 1:
            parts.append("SP")
        if self.recompute == "full":
            parts.append("recompute")
        elif self.recompute == "block":
            parts.append("half-recompute")
        elif self.recompute == "selective":
            parts.append("sel-recompute")
        if self.accumulation > 1:
            parts.append(f"accum{self.accumulation}")
        if self.micro_batch is not None:
            parts.append(f"mb{self.micro_batch}")
        return " ".join(parts)


def evaluations_unpaired(evaluations: int, evaluation_samples: float) -> tuple[str, str, float] | None:
    """A run's evaluations and the held-out samples in each go together (planner/physics/run_time.py prices them as
    one figure, so one without the other would add nothing): (the field given, the field missing, its value) when
    only one is above 0, else None."""
    if (evaluations > 0) == (evaluation_samples > 0):
        return None
    if evaluations > 0:
        return "evaluations", "evaluation_samples", float(evaluation_samples)
    return "evaluation_samples", "evaluations", float(evaluations)


def evaluations_unpaired_message(given: str, missing: str, value: float) -> str:
    """What ``evaluations_unpaired`` found, in the words of the entry point (``given`` and ``missing`` as it names
    the two fields)."""
    return (
        f"{given} needs {missing} > 0 (got {value:g}): give how many evaluations the run makes and the held-out "
        "samples in each, or neither"
    )


class Configuration(Strict):
    """One point of the design space: what to evaluate."""

    model: str
    """Workload id."""
    server: str
    """Server id."""
    nodes: Annotated[int, Field(ge=1, le=100_000)]
    """Number of nodes."""
    fabric: str | None = None
    """Fabric id; null = the server's first listed fabric."""
    power_cap: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 1.0
    """GPU power limit as a fraction of TDP."""
    global_batch: Annotated[int, Field(ge=1)] | None = None
    """Global batch; null = the workload's default, grown to keep every GPU busy."""
    samples: Positive | None = None
    """Samples to train at the reference batch; null = the workload's default."""
    precision: Precision | None = None
    """Compute precision; null = the workload's."""
    site: str = "us-colo"
    """Site id."""
    purchase: Purchase = "buy"
    """Buy (capex amortized over the life) or rent."""
    layout: Layout | None = None
    """Parallel layout; null = the fastest that fits."""
    life_years: Annotated[float, Field(gt=0, le=MAX_LIFE_YEARS, allow_inf_nan=False)] = 4.0
    """Amortization life for bought hardware, years."""
    failures: bool = True
    """Account for failures, restarts and checkpoints (goodput, planner/physics/reliability.py); false = a run that
    never fails."""
    startup_s: Annotated[float, Field(ge=0, le=MAX_STARTUP_S, allow_inf_nan=False)] = 0.0
    """Start-up of the run added to its time-to-train, seconds (initialization, compilation or graph capture,
    checkpoint load; planner/physics/run_time.py); 0 = none stated."""
    evaluations: Annotated[int, Field(ge=0, le=10_000_000)] = 0
    """Evaluations in the run, each a forward pass over ``evaluation_samples`` held-out samples; 0 = none."""
    evaluation_samples: Annotated[float, Field(ge=0, le=MAX_EVALUATION_SAMPLES, allow_inf_nan=False)] = 0.0
    """Held-out samples per evaluation (sequences for a language model); its time is the training time of the
    forward pass's share of as many samples at this configuration's throughput (planner/physics/run_time.py)."""
    evaluation_s: NonNegative = 0.0
    """Evaluation inside the run stated as fixed seconds, added to its time-to-train (planner/physics/run_time.py
    ``evaluation_time_s``); 0 = none stated."""

    @model_validator(mode="after")
    def _evaluations_with_samples(self) -> Configuration:
        unpaired = evaluations_unpaired(self.evaluations, self.evaluation_samples)
        if unpaired is not None:
            raise ValueError(evaluations_unpaired_message(*unpaired))
        return self


class Estimate(Strict):
    """What the exact model predicts for one configuration."""

    model: str
    server: str
    fabric: str
    site: str
    purchase: Purchase
    nodes: int
    gpus: int
    gpu: str
    power_cap: float
    power_cap_w: float
    precision: str
    layout: str
    global_batch: int
    samples_to_train: float
    throughput_samples_per_s: float
    step_time_s: float
    step_time_breakdown_s: dict[str, float]
    time_to_train_h: float
    goodput: float = 1.0
    """Share of wall-clock time making progress (failures, restarts, checkpoints)."""
    startup_s: float = 0.0
    """Start-up included in ``time_to_train_h``, seconds (``startup_s`` of the configuration or request; 0 unless
    stated)."""
    evaluation_s: float = 0.0
    """Evaluation included in ``time_to_train_h``, seconds (from the evaluations stated; 0 unless stated)."""
    memory_per_gpu_gb: float
    gpu_memory_gb: float
    fits_memory: bool
    gpu_power_w: float
    node_power_w: float
    power_kw: float
    startup_power_kw: float
    """IT power during the start-up, kW: GPUs at idle, at any cap (planner/physics/power.py); ``energy_kwh`` counts
    the start-up's hours at it."""
    facility_power_kw: float
    energy_kwh: float
    facility_energy_kwh: float
    switches: int
    capex_usd: float
    cost_usd: float
    cost_breakdown_usd: dict[str, float]
    carbon_kg: float
    achieved_tflops_per_gpu: float
    mfu: float
    scaling_efficiency: float
    bottleneck: str

    @property
    def time_to_train_breakdown_h(self) -> dict[str, float]:
        """``time_to_train_h`` as its named terms, hours: ``training`` (steps x step time / goodput),
        ``evaluation``, ``startup`` (planner/physics/run_time.py); they sum to it."""
        evaluation_h, startup_h = self.evaluation_s / 3600.0, self.startup_s / 3600.0
        return {
            "training": self.time_to_train_h - evaluation_h - startup_h,
            "evaluation": evaluation_h,
            "startup": startup_h,
        }
