"""Validating an edited catalog table says what each edit changed, and a price cell the editor left empty (a number
cell given text is cleared) is a warning that the server can no longer be bought -- never a silent change. The
browser test (test_browser_plan_inputs.py) does it on the Catalog page."""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.data import Catalog
from planner.present import apply_table, catalog_table, table_changes


def edited(shipped: Catalog, **cells: tuple[str, object]) -> pd.DataFrame:
    """The servers table with ``id=(column, value)`` cells changed (ids with '-' spelled '_')."""
    df = catalog_table(shipped, "servers")
    for sid, (column, value) in cells.items():
        df.loc[df["id"] == sid.replace("_", "-"), column] = value
    return df


def test_each_edit_is_summarised_with_its_old_and_new_value(shipped: Catalog) -> None:
    df = edited(shipped, mi350x_8=("price_usd", 3_100_000.0), l40s_4=("rack_units", 4))
    df = pd.concat([df, df[df["id"] == "dgx-h100"].assign(id="dgx-h100-copy")], ignore_index=True)
    df = df[df["id"] != "rtx-a6000-8"]
    new, problems = apply_table(shipped, "servers", df)
    assert new is not None and not problems
    before = shipped.server("l40s-4").rack_units
    assert [c.text() for c in table_changes(shipped, new, "servers")] == [
        "mi350x-8: price_usd 310,000 → 3,100,000",
        f"l40s-4: rack_units {before:,} → 4",
        "dgx-h100-copy: added",
        "rtx-a6000-8: removed",
    ]
    assert table_changes(shipped, shipped, "servers") == []


def test_a_price_left_empty_is_a_warning_that_the_server_is_no_longer_bought(shipped: Catalog) -> None:
    """The table editor clears a number cell typed as text: the server becomes rent-only, and validating says so
    (the change and a warning naming what it means), rather than reporting success alone."""
    new, problems = apply_table(shipped, "servers", edited(shipped, mi350x_8=("price_usd", np.nan)))
    assert new is not None and not problems and new.server("mi350x-8").price_usd is None
    (change,) = table_changes(shipped, new, "servers")
    assert change.cleared and change.text() == "mi350x-8: price_usd 310,000 → empty"
    warning = change.warning()
    assert warning is not None and "mi350x-8 can no longer be bought" in warning and "type it as a number" in warning


def test_a_price_given_as_text_is_an_error_that_changes_nothing(shipped: Catalog) -> None:
    """Text in a price cell that reaches the table (an uploaded CSV or YAML) is an error naming the server and the
    field; nothing is changed."""
    df = catalog_table(shipped, "servers").astype({"price_usd": object})  # a column read from a file with text
    df.loc[df["id"] == "mi350x-8", "price_usd"] = "3.1M"
    new, problems = apply_table(shipped, "servers", df)
    assert new is None and any("id=mi350x-8" in p and "price_usd" in p for p in problems), problems


def test_the_shipped_files_uploaded_unchanged_change_nothing(shipped: Catalog) -> None:
    """An uploaded YAML whose entries leave optional fields out (the shipped servers.yaml and gpus.yaml) is read
    with those fields' defaults, as the catalog loader reads it: accepted, and the catalog is the same."""
    from planner.data import catalog_dir
    from planner.present import read_upload

    for table in ("servers", "gpus"):
        path = catalog_dir() / f"{table}.yaml"
        new, problems = apply_table(shipped, table, read_upload(path.name, path.read_bytes(), table))
        assert new is not None and not problems, problems
        assert getattr(new, table) == getattr(shipped, table) and not table_changes(shipped, new, table)


def test_a_cleared_cell_of_a_field_with_a_default_is_an_error_not_the_default(shipped: Catalog) -> None:
    """A cell the editor clears is not read as the field's default where that default is a value: a monthly-billed
    server whose billing period is cleared is refused, never re-priced by the hour."""
    monthly = next(s.id for s in shipped.servers.values() if s.rent_billing_period == "month")
    new, problems = apply_table(
        shipped, "servers", edited(shipped, **{monthly.replace("-", "_"): ("rent_billing_period", None)})
    )
    assert new is None and any(f"id={monthly}" in p and "rent_billing_period" in p for p in problems), problems


def test_a_wrong_file_uploaded_as_a_table_is_said_at_once_and_a_right_one_is_not(shipped: Catalog) -> None:
    """A workload's YAML uploaded as the servers table: the page says at once that it does not validate, how many
    problems and which columns a server does not have -- not only once "Validate and use this table" is pressed.
    The shipped servers file uploads without a word."""
    from planner.data import catalog_dir
    from planner.data.catalog import models_dir
    from planner.present import read_upload, upload_warning

    model_file = models_dir() / "llama3_8b.yaml"
    df = read_upload(model_file.name, model_file.read_bytes(), "servers")
    said = upload_warning(shipped, "servers", model_file.name, df)
    assert said is not None
    head, *problems = said.splitlines()
    assert head.startswith("llama3_8b.yaml does not validate as the servers table (")
    assert "columns a servers entry does not have: family, framework, params" in head
    assert problems[0] == "- `servers (id=llama3-8b): gpu: Field required`" and problems[-1].startswith("- ... and ")
    servers_file = catalog_dir() / "servers.yaml"
    right = read_upload(servers_file.name, servers_file.read_bytes(), "servers")
    assert upload_warning(shipped, "servers", servers_file.name, right) is None
