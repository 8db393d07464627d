"""planner - the Streamlit front end. Thin: every number comes from the `planner` API (no Pyomo here).

Run: streamlit run app.py
"""

from __future__ import annotations

import hashlib
from typing import Any

import streamlit as st

from planner import views
from planner.data import Catalog, load_catalog
from planner.errors import PlannerInputError
from planner.optimize import Objective, PlanRequest, PlanResult, pareto, solve

PAGES = ["Plan", "Catalog", "Models", "Validation", "Fleet", "Batch"]
st.set_page_config(page_title="planner - GPU cluster capacity planner", layout="wide")


@st.cache_resource
def shipped_catalog() -> Catalog:
    return load_catalog()


def catalog() -> Catalog:
    return st.session_state.get("catalog") or shipped_catalog()


def catalog_version() -> str:
    return str(st.session_state.get("catalog_version", "shipped"))


@st.cache_data(max_entries=64, show_spinner=False)
def cached_solve(request_json: str, version: str, _cat: Catalog) -> str:
    return solve(PlanRequest.model_validate_json(request_json), _cat).model_dump_json()


@st.cache_data(max_entries=16, show_spinner=False)
def cached_pareto(request_json: str, version: str, x: Objective, y: Objective, _cat: Catalog) -> Any:
    return pareto(PlanRequest.model_validate_json(request_json), x=x, y=y, points=8, catalog=_cat)


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
def sidebar_request(cat: Catalog) -> PlanRequest | None:
    sb = st.sidebar
    sb.header("Training job")
    models = sorted(cat.workloads)
    model = sb.selectbox(
        "Workload", models, index=models.index("llama3-8b") if "llama3-8b" in models else 0, key="model"
    )
    wl = cat.workload(model)
    units = ["tokens", "samples"] if wl.sequence_length else ["samples", "epochs"]
    unit = sb.radio("Amount of work in", units, horizontal=True, key="unit")
    default = {"tokens": 1e12, "samples": wl.default_samples, "epochs": 90.0}[unit]
    amount = sb.number_input(f"{unit} to train", min_value=0.0, value=float(default), format="%.4g", key="amount")
    deadline = sb.number_input("Deadline (days)", min_value=0.0, value=30.0, step=1.0, key="deadline")
    sb.header("Limits")
    use_budget = sb.checkbox("Limit the budget", value=False, key="use_budget")
    budget = sb.number_input(
        "Budget (USD)", min_value=0.0, value=1e6, step=1e5, format="%.0f", key="budget", disabled=not use_budget
    )
    budget_kind = sb.radio("Budget covers", ["upfront", "total"], horizontal=True, key="budget_kind")
    power = sb.number_input(
        "Facility power envelope (kW, 0 = the site's)", min_value=0.0, value=0.0, step=100.0, key="power"
    )
    sites = sb.multiselect(
        "Sites",
        sorted(cat.sites),
        default=[sorted(cat.sites)[0]] if "us-colo" not in cat.sites else ["us-colo"],
        key="sites",
    )
    sb.header("Choices")
    objective = sb.selectbox("Minimise", ["energy", "cost", "carbon", "time"], key="objective")
    purchase = sb.radio("Buy or rent", ["buy", "rent", "either"], horizontal=True, key="purchase")
    gpus = sb.multiselect("Allowed GPUs (empty = all)", sorted(cat.gpus), key="gpus")
    fabrics = sb.multiselect("Allowed fabrics (empty = all)", sorted(cat.fabrics), key="fabrics")
    max_nodes = sb.number_input("Max nodes", min_value=1, max_value=100_000, value=1024, key="max_nodes")
    if amount <= 0:
        st.error(f"The amount of work must be positive: enter the {unit} to train.")
        return None
    if deadline <= 0 and objective != "time":
        st.error("The deadline must be positive (or minimise time).")
        return None
    if not sites:
        st.error("Choose at least one site.")
        return None
    fields: dict[str, Any] = {
        "model": model,
        unit: amount,
        "deadline_days": deadline if deadline > 0 else None,
        "budget_usd": budget if use_budget else None,
        "budget_kind": budget_kind,
        "power_kw": power or None,
        "sites": sites,
        "objective": objective,
        "purchase": purchase,
        "gpus": gpus or None,
        "fabrics": fabrics or None,
        "max_nodes": int(max_nodes),
    }
    try:
        return PlanRequest.model_validate(fields)
    except Exception as exc:
        st.error(f"Input problem: {exc}")
        return None


def page_plan() -> None:
    cat = catalog()
    req = sidebar_request(cat)
    st.title("Capacity plan")
    if req is None:
        return
    res = PlanResult.model_validate_json(cached_solve(req.model_dump_json(), catalog_version(), cat))
    if res.plan is None:
        st.error("No feasible plan. " + (res.explanation.message if res.explanation else ""))
        if res.explanation:
            for r in res.explanation.relaxations:
                st.markdown(f"- **relax {r.requirement}**: {r.message}")
        st.code(views.cli_command(req), language="bash")
        return
    status = "proven optimal" if res.status == "optimal" else "best found within the time limit (not proven optimal)"
    st.subheader(f"Recommended plan ({status}, minimising {res.objective})")
    card = views.plan_card(res)
    cols = st.columns(4)
    for i, (k, v) in enumerate(card.items()):
        cols[i % 4].metric(k, v)
    st.caption(
        f"Solver: HiGHS {res.solver.highs_status if res.solver else ''}, gap "
        f"{(res.solver.gap or 0) if res.solver else 0:.1e}; plan re-checked with the exact model."
    )
    st.markdown("**Alternatives** (best per other GPU type, then next-best distinct hardware)")
    st.dataframe(views.alternatives_frame(res), hide_index=True)
    c1, c2, c3 = st.columns(3)
    c1.download_button("Plan as JSON", views.result_json(res), "plan.json", "application/json")
    c2.download_button("Plan as CSV", views.plan_csv(res), "plan.csv", "text/csv")
    with c3:
        st.markdown("Same request on the command line:")
    st.code(views.cli_command(req), language="bash")

    tab_scaling, tab_cap, tab_break, tab_pareto = st.tabs(["Scaling", "Power cap", "Cost & energy", "Pareto front"])
    with tab_scaling:
        frame = views.scaling_frame(cat, req)
        if not frame.empty:
            chart = views.scaling_chart(frame, res)
            st.altair_chart(chart)
            st.download_button("Scaling chart (HTML)", chart.to_html(), "scaling.html", "text/html")
    with tab_cap:
        chart = views.power_cap_chart(views.power_cap_frame(cat, req, res))
        st.altair_chart(chart)
        st.download_button("Power-cap chart (HTML)", chart.to_html(), "power_cap.html", "text/html")
    with tab_break:
        chart = views.breakdown_chart(views.breakdown_frame(res))
        st.altair_chart(chart)
        st.download_button("Breakdown chart (HTML)", chart.to_html(), "breakdown.html", "text/html")
    with tab_pareto:
        x: Objective = st.selectbox("x objective", ["cost", "energy", "carbon", "time"], key="pareto_x")
        y: Objective = st.selectbox("y objective", ["energy", "cost", "carbon", "time"], key="pareto_y")
        if x == y:
            st.warning("Choose two different objectives.")
        elif st.checkbox("Compute the Pareto front", key="pareto_on"):
            front = cached_pareto(req.model_dump_json(), catalog_version(), x, y, cat)
            chart = views.pareto_chart(front, x, y)
            st.altair_chart(chart)
            st.dataframe(front, hide_index=True)
            st.download_button("Pareto chart (HTML)", chart.to_html(), "pareto.html", "text/html")


# --------------------------------------------------------------------------------------------- catalog
def page_catalog() -> None:
    st.title("Hardware catalog")
    cat = catalog()
    table = st.radio("Table", list(views.TABLES), horizontal=True, key="cat_table")
    upload = st.file_uploader(f"Upload {table} (YAML list or CSV)", type=["yaml", "yml", "csv"], key="cat_upload")
    df = views.catalog_table(cat, table)
    if upload is not None:
        try:
            df = views.read_upload(upload.name, upload.getvalue())
        except PlannerInputError as exc:
            st.error(str(exc))
    edited = st.data_editor(df, num_rows="dynamic", key=f"editor_{table}", hide_index=True)
    if st.button("Validate and use this table", key="apply"):
        new, problems = views.apply_table(cat, table, edited)
        if problems:
            st.error("The table has problems; nothing was changed:")
            for p in problems:
                st.markdown(f"- `{p}`")
        elif new is not None:
            st.session_state["catalog"] = new
            st.session_state["catalog_version"] = hashlib.sha1(views.table_yaml(new, table).encode()).hexdigest()[:10]
            st.success(f"Using the edited {table} table on the Plan page.")
    st.download_button(f"Download {table}.yaml", views.table_yaml(catalog(), table), f"{table}.yaml")
    with st.expander("Fabrics and sites"):
        st.dataframe([f.model_dump() for f in cat.fabrics.values()], hide_index=True)
        st.dataframe([s.model_dump() for s in cat.sites.values()], hide_index=True)


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
    st.dataframe(rows, hide_index=True)
    upload = st.file_uploader(
        "Add a custom model (YAML, see models/_template.yaml)", type=["yaml", "yml"], key="model_upload"
    )
    if upload is not None:
        try:
            new = views.add_workload(cat, upload.name, upload.getvalue())
            st.session_state["catalog"] = new
            st.session_state["catalog_version"] = hashlib.sha1(upload.getvalue()).hexdigest()[:10]
            st.success("Model added; choose it on the Plan page.")
        except PlannerInputError as exc:
            st.error(str(exc))


def page_validation() -> None:
    from pathlib import Path

    st.title("How far to trust the model")
    doc = Path(__file__).resolve().parent / "docs" / "VALIDATION.md"
    if doc.exists():
        st.markdown(doc.read_text())
    else:
        st.warning("docs/VALIDATION.md not found: run `planner validate`.")


def page_fleet() -> None:
    from pathlib import Path

    from planner.fleet import fleet

    st.title("Fleet: one procurement for a portfolio of jobs")
    upload = st.file_uploader("Fleet request (YAML, see examples/fleet.yaml)", type=["yaml", "yml"], key="fleet_up")
    example = Path(__file__).resolve().parent / "examples" / "fleet.yaml"
    if upload is not None:
        name, data = upload.name, upload.getvalue()
    elif example.exists():
        name, data = example.name, example.read_bytes()
        st.caption("Showing examples/fleet.yaml; upload your own portfolio to plan it.")
    else:
        return
    req = views.read_fleet_upload(name, data)
    if not st.button("Plan the fleet", key="fleet_run"):
        st.dataframe([j.model_dump() for j in req.jobs], hide_index=True)
        return
    with st.spinner("Solving the fleet MIP..."):
        plan = fleet(req, catalog())
    if plan.objective_value is None:
        st.error(f"No feasible fleet. {plan.explanation}")
        return
    status = "Optimal" if plan.status == "optimal" else "Best found (time limit)"
    st.subheader(f"{status} fleet: {plan.objective} = {plan.objective_value:,.6g}")
    st.dataframe(plan.purchase_frame(), hide_index=True)
    st.dataframe(plan.assignment_frame(), hide_index=True)
    chart = views.fleet_gantt(plan, req.slot_hours)
    st.altair_chart(chart)
    st.download_button("Fleet plan (JSON)", plan.model_dump_json(indent=2), "fleet.json", "application/json")
    st.download_button("Schedule chart (HTML)", chart.to_html(), "fleet.html", "text/html")


def page_batch() -> None:
    import tempfile

    from planner.batch import batch

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
    scenarios = views.read_batch_upload(upload.name, upload.getvalue())
    st.write(f"{len(scenarios)} scenarios")
    if len(scenarios) > 200:
        st.warning("More than 200 scenarios: use the command line for this sweep.")
        return
    if st.button("Run", key="batch_run"):
        with st.spinner(f"Solving {len(scenarios)} scenarios..."):
            df = batch(scenarios, tempfile.mkdtemp(prefix="planner-batch-"), workers=1, progress=False)
        st.dataframe(df, hide_index=True)
        st.download_button("Results (CSV)", df.to_csv(index=False), "results.csv", "text/csv")


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
