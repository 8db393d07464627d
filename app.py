"""planner - the Streamlit front end. Thin: every number comes from the `planner` API (no Pyomo here).

Run: streamlit run app.py
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import streamlit as st

from planner import present
from planner.batch import run as run_batch_scenarios
from planner.data import MAX_LIFE_YEARS, Catalog, load_catalog
from planner.errors import PlannerInputError
from planner.formatting import number_text, parse_number
from planner.plan import Objective, PlanRequest, PlanResult, pareto, plan_notes, solve

PARETO_POINTS = 8
PAGES = ["Plan", "Catalog", "Models", "Validation", "Fleet", "Batch"]
st.set_page_config(page_title="planner - GPU cluster capacity planner", layout="wide")


@st.cache_resource
def shipped_catalog() -> Catalog:
    return load_catalog()


def catalog() -> Catalog:
    """The session's catalog (the Catalog page's edits) or the shipped one. One built by planner modules that the
    server has since reloaded (code edited while the app runs) is not a Catalog of the modules now loaded, and every
    check would refuse it: it is loaded again (the shipped one) instead."""
    edited = st.session_state.get("catalog")
    if edited is not None and not isinstance(edited, Catalog):
        del st.session_state["catalog"]
        edited = None
    if edited is not None:
        return edited
    cat = shipped_catalog()
    if not isinstance(cat, Catalog):
        shipped_catalog.clear()
        cat = shipped_catalog()
    return cat


def catalog_version() -> str:
    return str(st.session_state.get("catalog_version", "shipped"))


@st.cache_data(max_entries=64, show_spinner=False)
def cached_solve(request_json: str, version: str, _cat: Catalog) -> str:
    return solve(PlanRequest.model_validate_json(request_json), _cat).model_dump_json()


@st.cache_data(max_entries=16, show_spinner=False)
def cached_pareto(request_json: str, version: str, x: Objective, y: Objective, _cat: Catalog) -> Any:
    return pareto(PlanRequest.model_validate_json(request_json), x=x, y=y, points=PARETO_POINTS, catalog=_cat)


def show_table(df: Any) -> None:
    """A table for people: numbers of 1,000 and more with thousands separators (6,069,200 USD, 1,500,000,000,000
    tokens; were 6069200 and 1500000000000), as the command line's tables write them; a value left unset is an
    empty cell (present.blank_missing), not 'None'."""
    df = present.blank_missing(df)
    config = {c: st.column_config.NumberColumn(format="localized") for c in present.separated_columns(df)}
    st.dataframe(df, hide_index=True, column_config=config)


def show_view(view: tuple[Any, str]) -> None:
    """A compact table of the app (present.alternatives_view, present.pareto_view): the line saying what every row
    shares, then the table."""
    table, shared = view
    if shared:
        st.caption(shared)
    show_table(table)


def guarded(fn: Any, *args: Any) -> Any:
    """Run a page; turn any bad input into a message instead of a traceback."""
    try:
        return fn(*args)
    except PlannerInputError as exc:
        st.error(f"Input problem: {exc}")
    except Exception as exc:  # pragma: no cover - last resort, never show a traceback
        st.error(f"Something went wrong ({type(exc).__name__}: {exc}). Please report it with your inputs.")
    return None


# ------------------------------------------------------------------------------------------------ plan
INTRO = (
    "Plan the hardware for one training job: the planner searches every server type, node count, network fabric "
    "and GPU power cap in the catalog, predicts each configuration with its performance/power/cost model, and picks "
    "the one that minimises your objective within the deadline, budget and power (a mixed-integer program solved "
    "by HiGHS). Set the job on the left; every number on this page comes from the same API as the `planner` "
    "command line."
)


PLAN_INPUTS = "plan_inputs"  # the Plan page's inputs, {widget key: value}: the page's for the session


def plan_inputs() -> dict[str, Any]:
    """The Plan page's inputs. Streamlit forgets a widget's state at the first run that does not draw it (any other
    page); this mapping is the page's, so its inputs come back when the page is drawn again."""
    inputs: dict[str, Any] = st.session_state.setdefault(PLAN_INPUTS, {})
    return inputs


def plan_field(widget: Callable[..., Any], label: str, key: str, default: Any, **kw: Any) -> Any:
    """A Plan-page widget bound to the page's inputs: drawn with their value for ``key`` (else ``default``; a value
    no longer among the widget's ``options``, after a catalog edit, gives way to the default), and its value stored
    back. Widgets get their value through ``st.session_state`` only (their own value argument left out, or None), so
    the two never disagree."""
    inputs = plan_inputs()
    if key not in st.session_state:
        value = inputs.get(key, default)
        options = kw.get("options")
        if options is not None:
            if isinstance(value, list):
                value = [v for v in value if v in options]
            elif value not in options:
                value = default
        st.session_state[key] = value
    value = widget(label, key=key, **kw)
    inputs[key] = value
    return value


def follow_workload(cat: Catalog, model: str) -> None:
    """A workload chosen: its own inputs (unit, amount in each unit, precision, framework, a deadline that plans)
    take its defaults, in the page's inputs and in the widgets' state (before the widgets are drawn); the others
    are kept."""
    inputs = plan_inputs()
    if inputs.get("defaults_of") == model:
        return
    with st.spinner(f"Finding a deadline that plans {model}..."):
        days, why = default_deadline(cat, model)
    for key, value in present.workload_inputs(cat, model, days).items():
        inputs[key] = value
        st.session_state[key] = value
    inputs["defaults_of"], inputs["deadline_default"], inputs["deadline_why"] = model, days, why


def default_deadline(cat: Catalog, model: str) -> tuple[float, str]:
    """The workload's default deadline: 30 days where its default request plans in 30 days, else the shortest
    deadline that plans, rounded up (present.deadline_that_plans). The request is the page's own first one for
    the workload, so its solve is the one the page then shows (cached)."""
    req, _ = present.inputs_request(cat, present.default_inputs(cat, model))
    if req is None:  # the page says what is wrong with the default inputs
        return present.DEFAULT_DEADLINE_DAYS, "the usual default"
    res = PlanResult.model_validate_json(cached_solve(req.model_dump_json(), catalog_version(), cat))
    return present.deadline_that_plans(res)


def normalize_amount(key: str) -> None:
    """The amount as typed, rewritten with thousands separators once it is a number (1.5e13 -> 15,000,000,000,000)."""
    with contextlib.suppress(ValueError):  # not a number: left as typed, and the page says what is wrong with it
        st.session_state[key] = number_text(parse_number(str(st.session_state[key])))


def sidebar_request(cat: Catalog) -> PlanRequest | None:
    """The request from the sidebar, or None after showing what is wrong (then no plan is shown)."""
    sb = st.sidebar
    first = present.common_inputs(cat)
    sb.header("Training job")
    model = plan_field(
        sb.selectbox,
        "Workload",
        "model",
        first["model"],
        options=sorted(cat.workloads),
        help="The model to train (see the Models page). Its amount of work, framework, precision and a deadline "
        "that plans come with it: choosing another workload sets those to its defaults.",
    )
    follow_workload(cat, model)
    wl = cat.workload(model)
    units = present.amount_units(wl)
    unit = plan_field(
        sb.radio,
        "Amount of work in",
        "unit",
        units[0],
        options=units,
        horizontal=True,
        help="tokens = sequences x sequence length; samples = training examples (at the reference batch); "
        "epochs = passes over the workload's dataset.",
    )
    default = present.amount_default(wl, unit)
    key = present.amount_key(model, unit)
    plan_field(
        sb.text_input,
        f"{unit.capitalize()} to train",
        key,
        number_text(default),
        on_change=normalize_amount,
        args=(key,),
        help=f"Amount of work in {unit} (default for {model}: {number_text(default)} {unit}); thousands separators "
        "and exponents (1.5e13) are read.",
    )
    inputs = plan_inputs()
    days, why = inputs["deadline_default"], inputs["deadline_why"]
    plan_field(
        sb.number_input,
        "Deadline (days)",
        "deadline",
        days,
        value=None,
        step=1.0,
        format="%.6g",
        help=f"Training must finish within this many days (wall clock). Default for {model}: {days:g} days ({why}).",
    )
    if days != present.DEFAULT_DEADLINE_DAYS:  # a default other than the usual 30 days: said where it is seen
        sb.caption(f"Default deadline for {model}: {days:g} days. {why[:1].upper()}{why[1:]}.")
    sb.header("Limits")
    use_budget = plan_field(
        sb.checkbox, "Limit the budget", "use_budget", first["use_budget"], help="Add a money limit (USD)."
    )
    plan_field(
        sb.number_input,
        "Budget (USD)",
        "budget",
        first["budget"],
        value=None,  # may be cleared: empty = a budget asked for and not given (a message), not $1M
        step=1e5,
        format="%.0f",
        disabled=not use_budget,
        help="Money limit in US dollars; what it covers is set below.",
    )
    plan_field(
        sb.radio,
        "Budget covers",
        "budget_kind",
        first["budget_kind"],
        options=["upfront", "total"],
        horizontal=True,
        help="upfront: what is spent before the run (the whole capex when buying, the whole rent when renting). "
        "total: the run's cost (amortized hardware share + energy, or the rent).",
    )
    plan_field(
        sb.number_input,
        "Facility power envelope (kW, 0 = the site's)",
        "power",
        first["power"],
        value=None,
        step=100.0,
        format="%.6g",
        help="Most facility power (IT x PUE) the cluster may draw, kW; 0 uses each site's own envelope.",
    )
    plan_field(
        sb.multiselect,
        "Sites",
        "sites",
        first["sites"],
        options=sorted(cat.sites),
        help="Where the cluster may run: electricity price (USD/kWh), PUE and grid carbon (kg CO2e/kWh).",
    )
    sb.header("Choices")
    plan_field(
        sb.selectbox,
        "Minimise",
        "objective",
        first["objective"],
        options=["energy", "cost", "carbon", "time"],
        help="energy: facility kWh; cost: USD of this run; carbon: kg CO2e; time: hours to train.",
    )
    plan_field(
        sb.radio,
        "Buy or rent",
        "purchase",
        first["purchase"],
        options=["buy", "rent", "either"],
        horizontal=True,
        help="Rent is billed in whole billing periods of each offer (cloud GPU servers by the hour, dedicated "
        "servers by the month); rented cloud GPUs run at full power (their power limit is not settable).",
    )
    plan_field(
        sb.number_input,
        "Service life of bought servers (years)",
        "life_years",
        first["life_years"],
        value=None,
        step=0.5,
        format="%.6g",
        help=f"Years bought (and owned) servers serve, in (0, {MAX_LIFE_YEARS:g}] (as `--life-years`): a bought run "
        "is charged capex x run time / life, must end within it, and owned servers serve until this age.",
    )
    plan_field(
        sb.number_input,
        "Start-up of the run (minutes)",
        "startup_min",
        first["startup_min"],
        value=None,
        min_value=0.0,
        step=5.0,
        format="%.6g",
        help="Time from the start of the run to its first training step: initialization, compilation or graph "
        "capture, checkpoint load (as `--startup-s`, in seconds there). Added to the time to train, and so to the "
        "deadline, the rent and the energy. 0 = none.",
    )
    plan_field(
        sb.number_input,
        "Evaluations during the run",
        "evaluations",
        first["evaluations"],
        value=None,
        min_value=0,
        step=1,
        help="How many times the run evaluates on a held-out set (as `--evaluations`). 0 = none.",
    )
    plan_field(
        sb.number_input,
        "Held-out samples per evaluation",
        "evaluation_samples",
        first["evaluation_samples"],
        value=None,
        min_value=0.0,
        step=100.0,
        format="%.6g",
        help="Samples (sequences for a language model) in each evaluation (as `--evaluation-samples`). An "
        "evaluation is a forward pass: it takes the time the plan's servers take to train a third of as many "
        "samples (the forward pass's share of the training FLOPs; more with frozen weights, as in LoRA).",
    )
    plan_field(
        sb.text_input,
        "Servers you own (optional)",
        "owned",
        first["owned"],
        placeholder="e.g. dgx-a100-80gb:64:hdr200:2.5",
        help="Servers the team already has: SERVER:COUNT[:FABRIC[:AGE_YEARS]], comma separated (FABRIC: the "
        "network they are cabled to, default the server's first listed; AGE_YEARS: their age now, default 0). A "
        "bought plan of that server on that fabric runs on them at no capex and pays only for the nodes and "
        "network it adds; they serve until the service life above. Owned nodes the run does not "
        "use are not charged: their idle power (kW) is shown.",
    )
    plan_field(
        sb.selectbox,
        "Precision",
        "precision",
        wl.precision,
        options=present.PRECISIONS,
        help=f"Number format of the training math ({model}'s own: {wl.precision}, set when the workload is "
        "chosen). fp8 needs an fp8 GPU (Hopper or newer), fp4 (block-scaled NVFP4 / MXFP4) an fp4 GPU (Blackwell, "
        "MI350): with none among the allowed GPUs it is an error, a plan on another GPU computes in the next "
        "precision it has (fp4 in fp8, fp8 in bf16) and says so; fp16 and tf32 run at the bf16 tensor-core rate "
        "(TFLOP/s), fp32 at 1/16 of it (no tensor cores).",
    )
    plan_field(
        sb.selectbox,
        "Framework",
        "framework",
        wl.framework,
        options=sorted({*cat.frameworks, wl.framework}),
        help=f"Training software profile (catalog/frameworks.yaml; {model}'s own: {wl.framework}, set when the "
        "workload is chosen): how much communication hides under compute (overlap, 0-1), gradient bucket size "
        "(MB), per-step overhead (ms) and which parallelism it supports (tensor/pipeline parallel, ZeRO stage).",
    )
    plan_field(
        sb.multiselect,
        "Allowed GPUs (empty = all)",
        "gpus",
        first["gpus"],
        options=present.trainable_gpus(cat),
        help="Restrict the GPU types considered (exactly these GPUs: b200 does not allow gb200); the GPUs some "
        "server of the catalog carries.",
    )
    plan_field(
        sb.multiselect,
        "Allowed fabrics (empty = all)",
        "fabrics",
        first["fabrics"],
        options=sorted(cat.fabrics),
        help="Restrict the networks considered (InfiniBand, RoCE, Ethernet; Gb/s per port).",
    )
    plan_field(
        sb.number_input,
        "Max nodes",
        "max_nodes",
        first["max_nodes"],
        value=None,
        step=1,
        help="Most servers (nodes) a plan may use, 1 to 100,000.",
    )
    req, problems = present.inputs_request(cat, plan_inputs())
    if req is None:
        for msg in problems:
            st.error(msg)
        st.info("Fix the input above to see a plan.")
    return req


def _downloads(chart: Any, name: str, key: str) -> None:
    """Self-contained HTML (Vega inlined, works offline) and PNG, generated when clicked."""
    c1, c2 = st.columns(2)
    c1.download_button(
        f"{name} (HTML, offline)",
        lambda: present.chart_html(chart),
        f"{key}.html",
        "text/html",
        key=f"dl_{key}_html",
        on_click="ignore",
    )
    c2.download_button(
        f"{name} (PNG)",
        lambda: present.chart_png(chart),
        f"{key}.png",
        "image/png",
        key=f"dl_{key}_png",
        on_click="ignore",
    )


def page_plan() -> None:
    cat = catalog()
    st.title("Capacity plan")
    st.markdown(INTRO)
    req = sidebar_request(cat)
    if req is None:
        return
    res = PlanResult.model_validate_json(cached_solve(req.model_dump_json(), catalog_version(), cat))
    if res.plan is None:
        st.error("No feasible plan. " + (res.explanation.message if res.explanation else ""))
        if res.explanation:
            for r in res.explanation.relaxations:
                st.markdown(f"- **relax {r.requirement}**: {r.message}")
        st.code(present.cli_command(req), language="bash")
        return
    status = "proven optimal" if res.status == "optimal" else "best found within the time limit (not proven optimal)"
    st.subheader(f"Recommended plan ({status}, minimising {res.objective})")
    st.markdown(present.plan_card_html(present.plan_card(res)), unsafe_allow_html=True)
    for note in plan_notes(cat, req, res.plan, style="app"):
        st.warning(f"Note: {note}.")
    st.caption(present.COST_EXPLAINED)
    st.caption(
        f"Solver: HiGHS {res.solver.highs_status if res.solver else ''}, gap "
        f"{(res.solver.gap or 0) if res.solver else 0:.1e}; plan re-checked with the exact model."
    )
    with st.expander("Why this plan", expanded=True):
        st.markdown("\n".join(present.why_this_plan(res)))
    st.markdown(
        "**Alternatives** (the next-best other options: another server, fabric, power cap, site or purchase; "
        "then the best of each other GPU type)"
    )
    show_view(present.alternatives_view(res))
    c1, c2, c3 = st.columns(3)
    c1.download_button("Plan as JSON", present.result_json(res), "plan.json", "application/json")
    c2.download_button("Plan as CSV", present.plan_csv(res), "plan.csv", "text/csv")
    with c3:
        st.markdown("Same request on the command line:")
    st.code(present.cli_command(req), language="bash")
    if catalog_version() != "shipped":  # the command alone would plan over the shipped catalog
        st.caption(
            "This plan uses the catalog as edited in this session (the Catalog or Models page): for the same plan on "
            "the command line, save the edited tables (Catalog page, Download) into a copy of the catalog folder and "
            "add `--catalog DIR`, and an added model's YAML into a copy of models/ with `--models DIR`."
        )

    tab_scaling, tab_cap, tab_break, tab_pareto = st.tabs(["Scaling", "Power cap", "Cost & energy", "Pareto front"])
    with tab_scaling:
        frame = present.scaling_frame(cat, req)
        if not frame.empty:
            chart = present.scaling_chart(frame, res, req.max_nodes, req.deadline_days)
            st.altair_chart(chart)
            _downloads(chart, "Scaling chart", "scaling")
    with tab_cap:
        if res.plan.purchase == "rent" and not cat.server(res.plan.server).power_cap_settable:
            st.info(f"The rented {res.plan.server} does not let you set the GPU power limit: it runs at full power.")
        chart = present.power_cap_chart(present.power_cap_frame(cat, req, res), req.deadline_days)
        st.altair_chart(chart)
        _downloads(chart, "Power-cap chart", "power_cap")
    with tab_break:
        chart = present.breakdown_chart(present.breakdown_frame(res))
        st.altair_chart(chart)
        _downloads(chart, "Breakdown chart", "breakdown")
    with tab_pareto:
        objectives = ["cost", "energy", "carbon", "time"]
        x: Objective = plan_field(
            st.selectbox, "x objective", "pareto_x", "cost", options=objectives, help="Minimised."
        )
        y: Objective = plan_field(
            st.selectbox, "y objective", "pareto_y", "energy", options=objectives, help="Constrained objective."
        )
        if x == y:
            st.warning("Choose two different objectives.")
        elif plan_field(
            st.checkbox, "Compute the Pareto front", "pareto_on", False, help="Solves 8 MIPs (epsilon-constraint)."
        ):
            front = cached_pareto(req.model_dump_json(), catalog_version(), x, y, cat)
            front, notes = present.front_with_precision(cat, req, front)  # fp4 on a GPU without it: fp8, said
            chart = present.pareto_chart(front, x, y)
            st.caption(present.pareto_note(front, PARETO_POINTS))
            for note in notes:
                st.warning(f"Note: {note}.")
            st.altair_chart(chart)
            show_view(present.pareto_view(front, x, y))  # compact, what every point shares said once
            _downloads(chart, "Pareto chart", "pareto")


# --------------------------------------------------------------------------------------------- catalog
def page_catalog() -> None:
    st.title("Hardware catalog")
    cat = catalog()
    table = st.radio("Table", list(present.TABLES), horizontal=True, key="cat_table")
    upload = st.file_uploader(f"Upload {table} (YAML list or CSV)", type=["yaml", "yml", "csv"], key="cat_upload")
    df = present.catalog_table(cat, table)
    if upload is not None:
        try:
            df = present.read_upload(upload.name, upload.getvalue(), table)
        except PlannerInputError as exc:
            st.error(f"Nothing was changed: {exc}")
            return
        if (warning := present.upload_warning(cat, table, upload.name, df)) is not None:
            st.warning(warning)
    edited = st.data_editor(df, num_rows="dynamic", key=f"editor_{table}", hide_index=True)
    if st.button("Validate and use this table", key="apply"):
        new, problems = present.apply_table(cat, table, edited)
        if problems:
            st.error("The table has problems; nothing was changed:")
            for p in problems:
                st.markdown(f"- `{p}`")
        elif new is not None:
            changes = present.table_changes(cat, new, table)
            st.session_state["catalog"] = new
            st.session_state["catalog_version"] = hashlib.sha1(present.table_yaml(new, table).encode()).hexdigest()[:10]
            said = f"{len(changes)} change{'' if len(changes) == 1 else 's'}" if changes else "no change"
            st.success(f"Using the edited {table} table on the Plan page ({said}).")
            if changes:
                st.markdown("\n".join(f"- {c.text()}" for c in changes))
            for c in changes:
                if (warning := c.warning()) is not None:
                    st.warning(warning)
    st.download_button(f"Download {table}.yaml", present.table_yaml(catalog(), table), f"{table}.yaml")
    with st.expander("Fabrics and sites"):
        show_table(present.readable([f.model_dump() for f in cat.fabrics.values()]))
        show_table(present.readable([s.model_dump() for s in cat.sites.values()]))
        show_table(present.readable([f.model_dump() for f in cat.frameworks.values()]))


def page_models() -> None:
    st.title("Workload library")
    cat = catalog()
    rows = [
        {
            "id": w.id,
            "family": w.family,
            "params": w.params + w.embedding_params,
            "precision": w.precision,
            "framework": w.framework,
            "default samples": w.default_samples,
            "batch": w.default_global_batch,
            "source": w.source,
        }
        for w in cat.workloads.values()
    ]
    show_table(present.readable(rows))
    upload = st.file_uploader(
        "Add a custom model (YAML, see models/_template.yaml)", type=["yaml", "yml"], key="model_upload"
    )
    if upload is not None:
        try:
            new = present.add_workload(cat, upload.name, upload.getvalue())
            st.session_state["catalog"] = new
            st.session_state["catalog_version"] = hashlib.sha1(upload.getvalue()).hexdigest()[:10]
            st.success("Model added; choose it on the Plan page.")
        except PlannerInputError as exc:
            st.error(str(exc))


@st.cache_data(show_spinner="Re-running the published measurements (10-15 s the first time)...")
def cached_validation(version: str, _cat: Catalog) -> Any:
    return present.validation_frame(_cat)


def page_validation() -> None:

    st.title("How far to trust the model")
    st.markdown(
        "Every published measurement in `reference/` (MLPerf Training and Power, Megatron-LM, Zeus power caps) "
        "re-run through the model. Error = (predicted - published) / published; *test* cases were not used to fit."
    )
    frame = cached_validation(catalog_version(), catalog())
    st.subheader("Summary")
    st.dataframe(present.validation_summary(frame), hide_index=True)
    st.subheader("Predicted vs published")
    st.caption("Dashed: a perfect prediction. Log scales; hover a point for the case and its error.")
    chart = present.validation_scatter(frame)
    st.altair_chart(chart)
    _downloads(chart, "Validation chart", "validation")
    doc = Path(__file__).resolve().parent / "docs" / "VALIDATION.md"
    with st.expander("Every case (docs/VALIDATION.md)"):
        if doc.exists():
            st.markdown(doc.read_text())
        else:
            st.warning("docs/VALIDATION.md not found: run `planner validate`.")


FLEET_EXAMPLES = {
    "portfolio.yaml": "pre-training, fine-tunes and evaluations on 64 owned DGX A100 + bought + rented servers",
    "fleet.yaml": "a small portfolio bought from scratch",
}


def _fleet_source() -> tuple[str, bytes] | None:
    """The fleet request to plan: a shipped example (the owned + bought + rented portfolio first) or an upload."""

    shipped = Path(__file__).resolve().parent / "examples"
    examples = {f"{k}: {v}": shipped / k for k, v in FLEET_EXAMPLES.items() if (shipped / k).exists()}
    source = st.radio(
        "Fleet request",
        ["shipped example", "upload my own"],
        horizontal=True,
        key="fleet_source",
        help="Plan one of the shipped examples (examples/*.yaml), or upload a request in the same format.",
    )
    if source == "upload my own":
        upload = st.file_uploader(
            "Fleet request (YAML, see examples/portfolio.yaml)", type=["yaml", "yml"], key="fleet_up"
        )
        if upload is None:
            st.info("Upload a fleet request (YAML): jobs with release and due slots, owned servers, what may be added.")
            return None
        return upload.name, upload.getvalue()
    if not examples:
        st.warning("No shipped examples found (examples/portfolio.yaml): upload a request instead.")
        return None
    pick = st.selectbox("Shipped example", list(examples), key="fleet_example", help="examples/ in the repository")
    st.caption(f"examples/{examples[pick].name} - the same file `planner fleet examples/{examples[pick].name}` plans.")
    return examples[pick].name, examples[pick].read_bytes()


def _fleet_with_progress(req: Any) -> Any:
    """fleet(req) in a worker thread while the page shows the time used (the call is one blocking solve)."""

    from planner.fleet import fleet

    limit = req.solver.time_limit_s
    bar = st.progress(0.0, text="Planning the fleet...")
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(fleet, req, catalog())
        while not future.done():
            time.sleep(0.5)
            used = time.perf_counter() - t0
            bar.progress(min(used / (limit + 30.0), 0.99), text=present.fleet_progress_text(req, used))
        plan = future.result()
    bar.empty()
    return plan, time.perf_counter() - t0


def page_fleet() -> None:
    st.title("Fleet: one procurement for a portfolio of jobs")
    st.markdown(
        "Plan the servers for several jobs over a horizon of slots (weeks): which **owned** servers to keep or "
        "retire, what to **buy** (server type and fabric), what to **rent**, and when each job runs - one MIP "
        "over every job's possible modes (planner/fleet/, the same as `planner fleet FILE`)."
    )
    src = _fleet_source()
    if src is None:
        return
    name, data = src
    req = present.read_fleet_upload(name, data)
    from planner.fleet import check_fleet_ids

    check_fleet_ids(catalog(), req)  # an unknown model or owned server: said with its job (entry)
    st.markdown(
        f"**{len(req.jobs)} jobs**, {req.slots} slots of {req.slot_hours:g} h at {req.site}; minimise "
        f"{req.objective}; may add: {req.purchase}"
        + (f"; power {req.power_kw:g} kW" if req.power_kw else "")
        + (f"; budget ${req.budget_usd:,.0f}" if req.budget_usd is not None else "")
    )
    show_table(present.readable([j.model_dump() for j in req.jobs]))
    if req.owned:
        st.markdown("**Owned servers**")
        show_table(present.readable([o.model_dump() for o in req.owned]))
    key = f"fleet_plan::{catalog_version()}::{req.model_dump_json()}"
    if st.button("Plan the fleet", key="fleet_run", type="primary") and key not in st.session_state:
        st.session_state[key] = _fleet_with_progress(req)
    if key not in st.session_state:
        st.info("Press **Plan the fleet** to solve (this can take a minute or more).")
        return
    plan, seconds = st.session_state[key]
    if plan.objective_value is None:
        st.error(plan.summary())  # 'No feasible fleet: <the explanation>'
        return
    st.subheader(plan.headline())
    gap = plan.solver.gap if plan.solver and plan.solver.gap is not None else 0.0
    st.caption(f"Solved in {seconds:.0f} s (HiGHS gap {gap:.1e}); plan re-priced exactly by planner/physics/cost.py.")
    st.markdown("\n".join(plan.decisions(markdown=True)))
    for text in present.fleet_owned_service_notes(catalog(), req):  # owned servers past their service: why retired
        st.warning(text)
    owned = present.fleet_owned_table(plan)
    if not owned.empty:
        st.markdown("**Owned servers: kept and retired**")
        show_table(present.readable(owned))
    bought = present.fleet_bought_table(plan)
    st.markdown("**Bought**" if not bought.empty else "**Bought**: nothing")
    if not bought.empty:
        show_table(present.readable(bought))
    rented = present.fleet_rented_table(plan, catalog())
    st.markdown("**Rented**" if not rented.empty else "**Rented**: nothing")
    if not rented.empty:
        show_table(present.readable(rented))
    st.markdown("**Jobs**")
    show_table(present.readable(plan.assignment_frame()))  # slots as '3-9,12' beside first/last slot and slots run
    chart = present.fleet_gantt(plan, req.slot_hours)
    st.altair_chart(chart)
    st.download_button("Fleet plan (JSON)", plan.model_dump_json(indent=2), "fleet.json", "application/json")
    _downloads(chart, "Schedule chart", "fleet")


def page_batch() -> None:

    st.title("Batch: many procurement scenarios")
    upload = st.file_uploader(
        "Scenario file (YAML grid/list or CSV, see examples/procurement.yaml)",
        type=["yaml", "yml", "csv"],
        key="batch_up",
    )
    if upload is None:
        st.info(
            "Upload a scenario file. Large sweeps run faster from the command line: "
            "`planner batch scenarios.yaml --out results/ --workers N [--engine ray]`."
        )
        return
    scenarios = present.read_batch_upload(upload.name, upload.getvalue())
    st.write(f"{len(scenarios):,} scenario{'' if len(scenarios) == 1 else 's'}")
    if len(scenarios) > 200:
        st.warning("More than 200 scenarios: use the command line for this sweep.")
        return
    # the results stay on the page (as the fleet plan does): were gone at the next rerun -- the download's own click
    key = f"batch::{catalog_version()}::{json.dumps(scenarios, sort_keys=True, default=str)}"
    if st.button("Run", key="batch_run") and key not in st.session_state:
        with st.spinner(f"Solving {len(scenarios):,} scenario{'' if len(scenarios) == 1 else 's'}..."):
            st.session_state[key] = run_batch_scenarios(
                scenarios, tempfile.mkdtemp(prefix="planner-batch-"), workers=1, progress=False
            )
    if key not in st.session_state:
        return
    df = st.session_state[key]
    head, table = present.batch_results_table(df, scenarios)
    st.markdown(f"**{head}**")
    show_table(table)
    st.download_button("Results (CSV)", df.to_csv(index=False), "results.csv", "text/csv", on_click="ignore")


page = st.sidebar.radio("Page", PAGES, key="page")
if page == "Plan":
    guarded(page_plan)
elif page == "Catalog":
    guarded(page_catalog)
elif page == "Models":
    guarded(page_models)
elif page == "Validation":
    guarded(page_validation)
elif page == "Fleet":
    guarded(page_fleet)
else:
    guarded(page_batch)
