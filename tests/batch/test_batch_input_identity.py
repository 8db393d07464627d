"""A rerun into a results directory compares the values of the catalog and workload files it was run with: a change is
refused naming the file, the entry and the field (old -> new value), and a change that alters no value (a comment,
the layout of the YAML) is no change, so the run resumes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from planner.batch import BatchStoreError, Identity, Store, expand, run_batch
from planner.batch.store import describe_difference, file_changes
from planner.data import catalog_dir, models_dir

SPEC = {"base": {"model": "resnet50", "objective": "energy"}, "grid": {"deadline_days": [1, 3]}}


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    """Copies of the shipped catalog and workload library, to edit."""
    cat, mod = tmp_path / "catalog", tmp_path / "models"
    shutil.copytree(catalog_dir(), cat)
    shutil.copytree(models_dir(), mod)
    return cat, mod


def first_run(out: Path, cat: Path, mod: Path) -> None:
    res = run_batch(SPEC, out, workers=1, progress=False, catalog_dir=str(cat), models_dir=str(mod))
    assert res.complete and res.ran == len(expand(SPEC))


def set_in_entry(path: Path, entry: str, field: str, value: str) -> None:
    """``field: value`` inside the YAML list entry ``- id: ENTRY`` (the first occurrence after it)."""
    text = path.read_text()
    start = text.index(f"- id: {entry}\n")
    m = re.compile(rf"^(\s+{field}: ).*$", re.M).search(text, start)
    assert m is not None
    path.write_text(text[: m.start()] + m[1] + value + text[m.end() :])


def test_a_changed_catalog_is_refused_naming_the_entry_and_field(tmp_path: Path, inputs: tuple[Path, Path]) -> None:
    cat, mod = inputs
    out = tmp_path / "out"
    first_run(out, cat, mod)
    set_in_entry(cat / "servers.yaml", "dgx-h100", "price_usd", "3800000")
    set_in_entry(cat / "gpus.yaml", "h100-sxm", "memory_gb", "96")
    llama = mod / "llama3_8b.yaml"
    llama.write_text(re.sub(r"(?m)^default_samples: .*$", "default_samples: 1.0e9", llama.read_text()))
    with pytest.raises(BatchStoreError) as refused:
        run_batch(SPEC, out, workers=1, progress=False, catalog_dir=str(cat), models_dir=str(mod))
    msg = str(refused.value)
    assert "the catalog and models differ: changed" in msg, msg
    assert "catalog/servers.yaml (dgx-h100: price_usd 380000 -> 3800000)" in msg, msg
    assert "catalog/gpus.yaml (h100-sxm: memory_gb 80 -> 96)" in msg, msg
    assert re.search(r"models/llama3_8b.yaml \(llama3-8b: default_samples \S+ -> 1.0e9\)", msg), msg
    assert "--force-new" in msg


def test_a_comment_or_layout_change_is_no_change(tmp_path: Path, inputs: tuple[Path, Path]) -> None:
    """Comments added to servers.yaml, a trailing comment and the flow style of one list changed in fabrics.yaml: the
    same values, so the rerun resumes (nothing to run) instead of refusing."""
    cat, mod = inputs
    out = tmp_path / "out"
    first_run(out, cat, mod)
    servers = cat / "servers.yaml"
    servers.write_text("# prices checked against our quotes\n" + servers.read_text() + "\n# end of the table\n")
    set_in_entry(cat / "servers.yaml", "dgx-h100", "rack_units", "8   # as measured")
    fabrics = cat / "fabrics.yaml"
    fabrics.write_text(fabrics.read_text().replace("\n- id:", "\n\n- id:"))
    res = run_batch(SPEC, out, workers=1, progress=False, catalog_dir=str(cat), models_dir=str(mod))
    assert res.complete and res.ran == 0
    set_in_entry(cat / "servers.yaml", "dgx-h100", "rack_units", "9")  # a value: refused, naming it
    with pytest.raises(BatchStoreError, match=r"dgx-h100: rack_units 8 -> 9"):
        run_batch(SPEC, out, workers=1, progress=False, catalog_dir=str(cat), models_dir=str(mod))


def test_changes_are_named_entry_by_entry_and_counted_past_three() -> None:
    old = [{"id": f"s{i}", "price_usd": 100 * i, "fabrics": ["a"]} for i in range(6)]
    new = [{**e, "price_usd": e["price_usd"] * 2} for e in old[:5]] + [{"id": "s9", "price_usd": 1}]
    new[0] = {**new[0], "fabrics": ["a", "b"]}
    texts = file_changes(old, new)
    assert texts[:3] == ['s0: fabrics ["a"] -> ["a", "b"]', "s1: price_usd 100 -> 200", "s2: price_usd 200 -> 400"]
    assert "s5 removed" in texts and any(t.startswith("s9 added") for t in texts)
    assert file_changes({"mfu": {"hopper": 0.41}}, {"mfu": {"hopper": 0.42}}) == ["mfu: hopper 0.41 -> 0.42"]
    ident = Identity("x", "f", {"catalog/servers.yaml": "new"}, "v", {"catalog/servers.yaml": new})
    stored = {
        "scenarios_sha": "x",
        "input_files": json.dumps({"catalog/servers.yaml": "old"}),
        "input_values": json.dumps({"catalog/servers.yaml": old}),
        "planner_version": "v",
    }
    (diff,) = describe_difference(stored, ident, set(), set())
    assert diff.startswith("the catalog differs: changed catalog/servers.yaml (s0: fabrics") and "; and " in diff


def test_a_store_written_before_values_were_recorded_resumes_on_the_same_files(tmp_path: Path) -> None:
    """A directory whose runs recorded file hashes only (no values) resumes with the same files, and a changed file is
    named by file."""
    out = tmp_path / "out"
    first_run(out, catalog_dir(), models_dir())
    with Store(out) as st:
        st.db.execute("UPDATE runs SET input_values = NULL")
    assert run_batch(SPEC, out, workers=1, progress=False).ran == 0
