"""The catalog and workload data: pydantic schemas, the loader of catalog/ and models/, the calibration file."""

from __future__ import annotations

from planner.data.calibration import read_calibration
from planner.data.catalog import (
    Catalog,
    catalog_dir,
    csv_cell,
    load_catalog,
    models_dir,
    parse_records,
    read_records,
    reference_dir,
)
from planner.data.schemas import (
    MAX_EVALUATION_SAMPLES,
    MAX_LIFE_YEARS,
    MAX_STARTUP_S,
    Configuration,
    Estimate,
    Fabric,
    FrameworkProfile,
    Gpu,
    Layout,
    MixtureOfExperts,
    MultiLatentAttention,
    PowerCapCurve,
    Precision,
    Server,
    Site,
    Workload,
)

__all__ = [
    "MAX_EVALUATION_SAMPLES",
    "MAX_LIFE_YEARS",
    "MAX_STARTUP_S",
    "Catalog",
    "Configuration",
    "Estimate",
    "Fabric",
    "FrameworkProfile",
    "Gpu",
    "Layout",
    "MixtureOfExperts",
    "MultiLatentAttention",
    "PowerCapCurve",
    "Precision",
    "Server",
    "Site",
    "Workload",
    "catalog_dir",
    "csv_cell",
    "load_catalog",
    "models_dir",
    "parse_records",
    "read_calibration",
    "read_records",
    "reference_dir",
]
