"""The batch report an analyst acts on: ``<out>/report.md`` (charts as PNG in ``<out>/charts/``) and
``<out>/report.html`` (self-contained: tables plus Vega-Lite charts with Vega inlined, works offline).

Per workload:

* **Ranked options.** Rows with a plan, ranked by the measure their budget limits (``budget_kind``):
  *up-front* = the capital expense when buying, the whole rent when renting; *run cost* (``total``) = the
  run's share of ownership or its rent plus energy. Both columns are shown side by side and labelled; the
  ranking column is marked. Scenarios of each budget kind are ranked separately.
* **Without a plan.** Infeasible scenarios with their varied parameters, the solver's explanation and the
  relaxation it proposes (requirement, given, needed); bad input and errors with their message.
* **Sensitivity.** For every varied parameter p and plan attribute a (server, GPU, the precision computed in,
  nodes, fabric, power cap, site, buy/rent): among scenarios that differ only in p, in how many adjacent pairs
  (p sorted) does a change. Trivial pairs are left out: a filter that names the attribute itself (``gpus`` ->
  GPU and server, ``servers`` -> server and GPU, ``fabrics`` -> fabric, ``sites`` -> site, ``purchase`` -> buy/rent,
  ``power_caps`` -> cap, ``precision`` -> the precision computed in).
* **Chart.** Up-front vs run cost of every plan, colour = GPU, shape = buy/rent.

PNG charts need ``vl-convert-python`` (a dependency of the ``report`` extra); without it the report says so
and the HTML holds the tables only.
"""

from __future__ import annotations

import html
import itertools
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from planner.batch.scenarios import PLAN_COLUMNS
from planner.batch.store import FINAL_STATUSES, Store
from planner.formatting import ceil_sig, color_scheme, sig4

OK = ("optimal", "time_limit")
TOP = 10
TRIVIAL = {
    "gpus": {"gpu", "server"},
    "servers": {"server", "gpu"},
    "fabrics": {"fabric"},
    "sites": {"site"},
    "purchase": {"purchase"},
    "power_caps": {"power_cap"},
    "precision": {"precision"},
}
MEASURE = {
    "upfront": ("upfront_usd", "up-front USD (capex when buying, the whole rent when renting)"),
    "total": ("cost_usd", "run cost USD (share of ownership or rent, plus energy)"),
}
LABELS = {
    "upfront_usd": "up-front USD",
    "cost_usd": "run cost USD",
    "time_to_train_days": "days",
    "facility_energy_kwh": "facility energy kWh",
    "carbon_kg": "carbon kg",
    "power_cap": "cap",
    "precision": "computes in",
    "owned_nodes": "owned nodes",
}

Block = tuple[str, Any]


# ------------------------------------------------------------------------------------------- analysis
def _display(v: Any) -> Any:
    if isinstance(v, list):  # owned servers (mappings) as JSON, not Python's repr
        return ";".join(json.dumps(x, sort_keys=True) if isinstance(x, dict) else str(x) for x in v)
    if isinstance(v, dict):
        return json.dumps(v, sort_keys=True)
    return v


def parameters(df: pd.DataFrame) -> pd.DataFrame:
    """The scenario fields of each row as columns (lists shown ``a;b``; missing fields ``(default)``)."""
    if "scenario" not in df or not len(df):
        return pd.DataFrame(index=df.index)
    recs = [json.loads(s) if isinstance(s, str) else {} for s in df["scenario"]]
    params = pd.DataFrame([{k: _display(v) for k, v in r.items()} for r in recs], index=df.index)
    return params.astype(object).where(params.notna(), "(default)")


def swept(params: pd.DataFrame) -> list[str]:
    """The parameters that take more than one value across the scenarios."""
    return [c for c in params.columns if params[c].astype(str).nunique() > 1]


def _sort_key(s: pd.Series) -> pd.Series:
    num = pd.to_numeric(s, errors="coerce")
    return num if num.notna().all() else s.astype(str)


def sensitivity(ok: pd.DataFrame, params: Iterable[str], attributes: Iterable[str] = PLAN_COLUMNS) -> pd.DataFrame:
    """(parameter, attribute) -> adjacent pairs that differ only in the parameter, and how many change it.

    ``ok`` holds the parameter columns and the plan attributes. Trivial pairs (TRIVIAL) are skipped; only
    pairs with at least one change are returned, with up to three examples each.
    """
    params = list(params)
    rows = []
    for p in params:
        others = [q for q in params if q != p]
        groups: Iterable[tuple[Any, pd.DataFrame]] = (
            ok.groupby([ok[q].astype(str) for q in others], dropna=False) if others else [((), ok)]
        )
        pairs: list[tuple[pd.Series, pd.Series]] = []
        for _, g in groups:
            g = g.sort_values(p, key=_sort_key)
            recs = [r for _, r in g.iterrows()]
            pairs += list(itertools.pairwise(recs))
        if not pairs:
            continue
        for a in attributes:
            if a in TRIVIAL.get(p.removeprefix("param:"), set()) or a not in ok:
                continue
            changed = [(x, y) for x, y in pairs if str(x[a]) != str(y[a])]
            if changed:
                ex = sorted({f"{x[p]} -> {y[p]}: {_fmt(x[a])} -> {_fmt(y[a])}" for x, y in changed})
                rows.append(
                    {
                        "parameter": p,
                        "plan attribute": a,
                        "pairs changed": f"{len(changed)} of {len(pairs)}",
                        "share": len(changed) / len(pairs),
                        "examples": "; ".join(ex[:3]),
                    }
                )
    out = pd.DataFrame(rows, columns=["parameter", "plan attribute", "pairs changed", "share", "examples"])
    return out.sort_values(["share", "parameter"], ascending=[False, True]).reset_index(drop=True)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return sig4(v)
    return str(v)


def relaxation_text(text: Any) -> str:
    """A row's ``relaxations`` (JSON) as 'deadline: given 1, needs 53.19 days; ...' ('' when there are none).

    The needed value is rounded up to 4 significant figures, as the solver's message states it: a stated minimum
    must suffice (rounded to nearest, 'needs 53.18 days' could name a deadline that leaves the scenario infeasible).
    """
    if not isinstance(text, str) or not text:
        return ""
    try:
        rel = json.loads(text)
    except json.JSONDecodeError:
        return ""
    return "; ".join(
        f"{r['requirement']}: given {sig4(r['given'])}, needs {sig4(ceil_sig(r['needed'], 4))} {r['unit']}" for r in rel
    )


# ------------------------------------------------------------------------------------------- charts
def cost_chart(ok: pd.DataFrame, title: str) -> dict[str, Any]:
    """Vega-Lite: up-front vs run cost, colour = GPU, shape = buy/rent (data inline)."""
    cols = ["id", "gpu", "precision", "server", "nodes", "purchase", "site", "upfront_usd", "cost_usd"]
    cols.append("time_to_train_days")
    values = json.loads(ok[[c for c in cols if c in ok]].to_json(orient="records"))
    n_gpus = int(ok["gpu"].nunique()) if "gpu" in ok else 0
    # a colour of its own per GPU type (Vega's default repeats its 10 colours; present.charts.gpu_colors for the app)
    scheme = color_scheme(n_gpus)
    return {
        "title": title,
        "width": 520,
        "height": 340,
        "data": {"values": values},
        "mark": {"type": "point", "filled": True, "size": 80, "opacity": 0.8},
        "encoding": {
            "x": {
                "field": "upfront_usd",
                "type": "quantitative",
                "title": MEASURE["upfront"][1],
                "scale": {"zero": False},
            },
            "y": {"field": "cost_usd", "type": "quantitative", "title": MEASURE["total"][1], "scale": {"zero": False}},
            "color": {"field": "gpu", "type": "nominal", "title": "GPU", "scale": {"scheme": scheme}},
            "shape": {"field": "purchase", "type": "nominal", "title": "buy/rent"},
            "tooltip": [
                {
                    "field": c,
                    "type": "nominal"
                    if c in ("id", "gpu", "precision", "server", "purchase", "site")
                    else "quantitative",
                }
                for c in cols
                if c in ok
            ],
        },
    }


def _vlc() -> Any:
    try:
        import vl_convert

        return vl_convert
    except ImportError:
        return None


# ------------------------------------------------------------------------------------------- report
def build(df: pd.DataFrame, scenarios: list[dict[str, Any]], run: dict[str, Any] | None) -> list[Block]:
    """The report as blocks: ("h2"/"h3"/"p", text), ("table", DataFrame), ("chart", (name, spec))."""
    blocks = summary_blocks(df, scenarios, run)
    if not len(df):
        return blocks
    params = parameters(df)
    full = pd.concat([df, params.drop(columns=[c for c in params.columns if c in df.columns])], axis=1)
    for c in params.columns:  # a parameter named like a result column (e.g. gpus) is shown as the parameter
        full[f"param:{c}"] = params[c]
    models = (full["model"] if "model" in full else pd.Series(None, index=df.index)).fillna("(no model)").astype(str)
    for model, idx in models.groupby(models).groups.items():
        blocks += workload_blocks(str(model), full.loc[idx], params.loc[idx])
    return blocks


def summary_blocks(df: pd.DataFrame, scenarios: list[dict[str, Any]], run: dict[str, Any] | None) -> list[Block]:
    """The title, the counts by status, the run's inputs, and how many scenarios have no answer yet."""
    blocks: list[Block] = [("h1", "Batch report")]
    total = len(scenarios) or len(df)
    counts = df["status"].value_counts().to_dict() if len(df) else {}
    answered = int(df["status"].isin(FINAL_STATUSES).sum()) if len(df) else 0
    missing = total - len(df)
    line = f"{total} scenarios: " + ", ".join(f"{v} {k}" for k, v in counts.items())
    if missing > 0:
        line += f", {missing} not run yet"
    blocks.append(("p", line + "."))
    if run:
        blocks.append(
            (
                "p",
                f"Scenarios from {run.get('scenario_source')} (set sha256 {str(run.get('scenarios_sha'))[:12]}), "
                f"catalog + workloads sha256 {str(run.get('inputs_sha'))[:12]}, planner {run.get('planner_version')}.",
            )
        )
    if answered < total:
        blocks.append(
            (
                "p",
                f"**{total - answered} scenario(s) have no answer yet** (not run, or an error): rerun the same "
                "`planner batch` command to resume; only those run.",
            )
        )
    return blocks


def workload_blocks(model: str, sub: pd.DataFrame, sub_params: pd.DataFrame) -> list[Block]:
    """One workload's section: its counts and varied parameters, its plans ranked, its chart and sensitivity, and the
    scenarios without a plan."""
    varied = [c for c in swept(sub_params) if c != "model"]
    pcols = [f"param:{c}" for c in varied]
    rename = {f"param:{c}": c for c in varied}
    sc = sub["status"].value_counts().to_dict()
    blocks: list[Block] = [
        ("h2", f"Workload {model}"),
        (
            "p",
            f"{len(sub)} scenario(s): "
            + ", ".join(f"{v} {k}" for k, v in sc.items())
            + (f". Varied: {', '.join(varied)}." if varied else "."),
        ),
    ]
    ok = sub[sub["status"].isin(OK)].copy()
    if len(ok):
        blocks += ranked_blocks(ok, pcols, rename)
        blocks.append(
            ("chart", (f"{_slug(model)}_cost", cost_chart(ok, f"{model}: up-front vs run cost of each plan")))
        )
        blocks += sensitivity_blocks(ok, pcols, varied)
    infeasible = sub[sub["status"] == "infeasible"]
    if len(infeasible):
        t = infeasible[["id", *pcols]].rename(columns=rename)
        t["why"] = infeasible["message"]
        t["relaxation"] = infeasible["relaxations"].map(relaxation_text) if "relaxations" in infeasible else ""
        blocks += [("h3", "Infeasible scenarios and the relaxation that would make them feasible"), ("table", t)]
    other = sub[~sub["status"].isin([*OK, "infeasible"])]
    if len(other):
        t = other[["id", "status", *pcols]].rename(columns=rename)
        t["message"] = other["message"]
        blocks += [("h3", "Bad input and errors"), ("table", t)]
    return blocks


def ranked_blocks(ok: pd.DataFrame, pcols: list[str], rename: dict[str, str]) -> list[Block]:
    """The plans of each budget kind ranked by the measure their budget limits, the best TOP shown."""
    blocks: list[Block] = []
    kinds = ok["budget_kind"].fillna("upfront") if "budget_kind" in ok else pd.Series("upfront", index=ok.index)
    for kind in sorted(kinds.unique()):
        part = ok[kinds == kind]
        col, label = MEASURE.get(kind, MEASURE["upfront"])
        ranked = part.sort_values([col, "cost_usd" if col != "cost_usd" else "upfront_usd"], kind="stable")
        show = pd.DataFrame({"rank": range(1, len(ranked) + 1)}, index=ranked.index)
        for c in pcols:
            show[rename[c]] = ranked[c]
        for c in ("gpu", "precision", "server", "nodes", "fabric", "power_cap", "purchase", "site"):
            if c in ranked:
                show[LABELS.get(c, c)] = ranked[c]
        if "owned_nodes" in ranked and ranked["owned_nodes"].fillna(0).any():  # of the nodes, those owned
            show[LABELS["owned_nodes"]] = ranked["owned_nodes"].fillna(0).astype(int)
        for c in ("upfront_usd", "cost_usd"):
            head = LABELS[c] + (" (ranked by)" if c == col else "")
            show[head] = ranked[c].map(lambda v: f"{v:,.0f}")
        show["days"] = ranked["time_to_train_days"].map(lambda v: f"{v:.3g}")
        show["facility energy MWh"] = (ranked["facility_energy_kwh"] / 1e3).map(lambda v: f"{v:,.4g}")
        blocks.append(("h3", f"Plans ranked by {label}"))
        blocks.append(
            (
                "p",
                f"Budget kind `{kind}`: {len(part)} plan(s)"
                + (f"; the best {TOP} shown (all in results.csv)." if len(part) > TOP else "."),
            )
        )
        blocks.append(("table", show.head(TOP)))
    return blocks


def sensitivity_blocks(ok: pd.DataFrame, pcols: list[str], varied: list[str]) -> list[Block]:
    """Which varied parameter changes which plan attribute (or that none does)."""
    sens = sensitivity(ok, pcols) if varied else pd.DataFrame()
    if len(sens):
        sens["parameter"] = sens["parameter"].str.removeprefix("param:")
    blocks: list[Block] = [("h3", "Sensitivity of the plan to each varied parameter")]
    if len(sens):
        blocks.append(
            (
                "p",
                "Pairs of scenarios that differ in one parameter only (adjacent values); "
                "trivial pairs such as a GPU filter changing the GPU are not counted.",
            )
        )
        blocks.append(("table", sens.drop(columns=["share"])))
    else:
        blocks.append(("p", "No varied parameter changes any plan attribute (beyond trivial ones)."))
    return blocks


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "chart"


def _md_table(t: pd.DataFrame) -> str:
    return t.to_markdown(index=False) if len(t) else "(none)"


def render_markdown(blocks: list[Block], charts: dict[str, str]) -> str:
    """The report's blocks as Markdown, each chart as its PNG (``charts``: name -> relative path) or a line saying
    how to get the charts."""
    out: list[str] = []
    for kind, body in blocks:
        if kind in ("h1", "h2", "h3"):
            out += ["#" * int(kind[1]) + " " + body, ""]
        elif kind == "p":
            out += [body, ""]
        elif kind == "table":
            out += [_md_table(body), ""]
        elif kind == "chart":
            name, _ = body
            out += [f"![{name}]({charts[name]})" if name in charts else "(charts: pip install vl-convert-python)", ""]
    return "\n".join(out)


def render_html(blocks: list[Block], bundle: str | None) -> str:
    """The report's blocks as one self-contained HTML page: tables, and the charts as Vega-Lite with Vega inlined
    (``bundle``; without it, the tables only)."""
    parts = []
    n = 0
    for kind, body in blocks:
        if kind in ("h1", "h2", "h3"):
            parts.append(f"<{kind}>{html.escape(body)}</{kind}>")
        elif kind == "p":
            text = html.escape(body)
            text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
            text = re.sub(r"`(.+?)`", r"<code>\1</code>", text)
            parts.append(f"<p>{text}</p>")
        elif kind == "table":
            parts.append(body.to_html(index=False, border=0, classes="t", na_rep="") if len(body) else "<p>(none)</p>")
        elif kind == "chart" and bundle is not None:
            n += 1
            spec = json.dumps(body[1]).replace("</", "<\\/")
            parts.append(
                f'<div id="chart{n}"></div><script>vegaEmbed("#chart{n}", {spec}, {{"actions": false}});</script>'
            )
    head = (
        "<style>body{font-family:sans-serif;margin:2em}table.t{border-collapse:collapse;font-size:13px}"
        "table.t td,table.t th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}</style>"
    )
    script = "<script>" + bundle.replace("</script", "<\\/script") + "</script>" if bundle is not None else ""
    note = "" if bundle is not None else "<p>(charts: pip install vl-convert-python)</p>"
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><title>Batch report</title>{head}{script}</head>'
        f"<body>{note}{''.join(parts)}</body></html>\n"
    )


def report_blocks(out: str | os.PathLike[str]) -> list[Block]:
    """The report of the results in ``out`` as blocks (:func:`build`)."""
    with Store(out, readonly=True) as store:
        df = store.frame()
        scenarios = store.scenarios()
        runs = store.runs()
    run = runs.iloc[-1].to_dict() if len(runs) else None
    return build(df, scenarios, run)


def write_report(blocks: list[Block], target: Path) -> Path:
    """Write ``blocks`` to ``target`` (Markdown, charts as PNG in ``charts/`` beside it) and to the same name with
    .html; return ``target``."""
    vlc = _vlc()
    charts: dict[str, str] = {}
    if vlc is not None:
        cdir = target.parent / "charts"
        cdir.mkdir(parents=True, exist_ok=True)
        for kind, body in blocks:
            if kind == "chart":
                name, spec = body
                (cdir / f"{name}.png").write_bytes(vlc.vegalite_to_png(spec, scale=1.5))
                charts[name] = f"charts/{name}.png"
    target.write_text(render_markdown(blocks, charts))
    bundle = vlc.javascript_bundle() if vlc is not None and any(k == "chart" for k, _ in blocks) else None
    target.with_suffix(".html").write_text(render_html(blocks, bundle))
    return target


def report(out: str | os.PathLike[str], path: str | os.PathLike[str] | None = None) -> Path:
    """Write ``report.md`` (+ ``charts/*.png``) and ``report.html`` for the results in ``out``; return the .md path."""
    return write_report(report_blocks(out), Path(path) if path else Path(out) / "report.md")


def report_document(blocks: list[Block], folder: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The report as data (``planner batch report --json``): its title, and each heading a section holding its
    paragraphs (``text``), tables (rows as records), charts (name, and the PNG under ``folder`` when one was written)
    and the sections under it (a workload's under the report, a table's under its workload)."""

    def section(title: str | None) -> dict[str, Any]:
        return {"title": title, "text": [], "tables": [], "charts": [], "sections": []}

    root = section(None)
    stack: list[tuple[int, dict[str, Any]]] = [(1, root)]
    for kind, body in blocks:
        if kind == "h1":
            root["title"] = body
        elif kind in ("h2", "h3"):
            level = int(kind[1])
            while stack[-1][0] >= level:
                stack.pop()
            node = section(body)
            stack[-1][1]["sections"].append(node)
            stack.append((level, node))
        elif kind == "p":
            stack[-1][1]["text"].append(body)
        elif kind == "table":
            stack[-1][1]["tables"].append(body.to_dict(orient="records"))
        elif kind == "chart":
            png = Path(folder) / "charts" / f"{body[0]}.png" if folder is not None else None
            stack[-1][1]["charts"].append({"name": body[0], "png": str(png) if png and png.exists() else None})
    return root
