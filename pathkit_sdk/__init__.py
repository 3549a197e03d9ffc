"""The public helper API for plugin authors: import from here, never from a `_private` module.

What a third-party dataset, metric or test needs and would otherwise rewrite, in one place,
documented with every signature in docs/api/sdk.md (written into the page, checked against this
code by tests/sdk/test_sdk_docs.py):

- **Cohort tables** (`pathkit_sdk.cohort`): read a user's table (CSV, TSV, Parquet, JSON, JSONL,
  the REG layout) with `read_table`, turn its rows into cases with `cohort_rows` and
  `group_rows`, check them (`check_duplicates`, `drop_missing_files` for `--skip-missing`), choose
  the split (`choose_split`: option `splits_file`, a split column, or a seeded draw kept in the
  workspace) and let `CohortDataset` do loading, splits, exclusions and validation. `COHORT_OPTIONS`
  are the options every table dataset shares. docs/file-formats.md, "Cohort tables", has the
  conventions.
- **Report JSON files** (`pathkit_sdk.reports`): a release shipped as one JSON file of report
  records (REG 2025, HISTAI's metadata, PathText): `find_json_file` picks it, `read_json` parses
  it naming the file and the bad byte or line, `read_report_records` checks its records (a list,
  a wrapped list or the train/val/test layout).
- **Splits** (`pathkit_sdk.splits`; `split_statement` is the run's own): a user's split checked
  and used exactly (`check_user_split`, `read_split_file`, `match_split_ids`), a seeded patient-disjoint split
  drawn only when none is given (`draw_split`, `load_or_draw_split`), what a split holds in one
  sentence (`split_statement`), and stratified fold manifests (`make_splits`,
  `load_or_create_splits`).
- **Confidence intervals** (`pathkit_sdk.bootstrap`,
  `pathkit_sdk.intervals`): percentile
  bootstrap intervals of a per-case mean or of a corpus statistic (`bootstrap_ci`,
  `bootstrap_statistic_ci`, `bootstrap_statistics_ci`), Wilson / exact intervals of proportions
  (`proportion_ci`), and the test-set size facts a metric records (`sample_facts` under
  `details[SAMPLE_KEY]`).
- **Checkpoints** (`pathkit_sdk.checkpoints`): an encoder's or generator's checkpoint checked
  against its published sha256 (`verify_sha256`), read safely
  (`read_state_dict`: safetensors, or a pickle loaded weights-only) and fitted strictly
  (`load_state_dict_checked`, `state_dict_mismatches`: every missing, unexpected or misshapen key
  named).
- **Ground-truth masks** (`pathkit_sdk.masks`): a mask image read with the resolution its tags
  state (`read_raster`), placed on a slide (`frame_on_slide`) and read onto a grid by pixel
  centres (`resample`), and the segmentation task's ground-truth record as one boolean mask
  (`reference_mask`); docs/segmentation.md, "Ground truth (formats)", has the formats.
- **Report charts** (`pathkit_sdk.charts`): the grouped bars with interval whiskers (`bar_chart`)
  and annotated heatmaps (`heatmap`) of the tasks' and plugins' report sections, drawn on the
  core's `pathkit_core.report.figures.new_figure` (docs/reports.md).
- **Synthetic slides** (`pathkit_sdk.synthetic`): `write_synthetic_slide` writes a small
  pyramidal TIFF OpenSlide opens at a given mpp, its tissue made of `Blob`s whose colour and
  texture can encode a label, for a plugin's demo and tests.
- **Tile streaming** (`pathkit_sdk.tiles`): a tile manifest's tiles in manifest order from worker
  processes, through a shared-memory ring buffer (`iter_tile_batches`) or a torch DataLoader over
  the core's `TileReader` (`tile_loader`); docs/wsi.md, section 5.
- **Plugin commands** (`pathkit_sdk.commands`): one table of `CliOption`s read both as a typer
  command (`typer_command`) and by the plain parser (`parse_plain`, `run_plain`) a command the
  `plain_commands` hook names runs without typer.

The core never imports this package.
"""

from __future__ import annotations

from pathkit_core.run.dataset import split_statement
from pathkit_sdk.bootstrap import (
    bootstrap_ci,
    bootstrap_distribution,
    bootstrap_statistic_ci,
    bootstrap_statistics_ci,
    resample_indices,
)
from pathkit_sdk.charts import bar_chart, heatmap
from pathkit_sdk.checkpoints import load_state_dict_checked, read_state_dict, state_dict_mismatches, verify_sha256
from pathkit_sdk.cohort import (
    COHORT_OPTIONS,
    COLUMN_ALIASES,
    TABLE_SUFFIXES,
    CaseRows,
    CohortDataset,
    CohortRow,
    Table,
    cell,
    check_duplicates,
    check_part_classes,
    check_slide_mpps,
    choose_split,
    class_order,
    cohort_rows,
    column_split,
    drawn_split,
    drop_missing_files,
    file_split,
    find_column,
    find_table,
    group_rows,
    option,
    part_counts,
    path_inside,
    plain_name,
    plausible_mpp,
    read_table,
    require_columns,
    resolve_file,
    splits_folder,
)
from pathkit_sdk.commands import REQUIRED, CliOption, parse_plain, run_plain, typer_command
from pathkit_sdk.intervals import (
    MIN_CASES,
    MIN_CASES_PER_CLASS,
    PROPORTION_METHODS,
    SAMPLE_KEY,
    proportion_ci,
    sample_facts,
    small_sample_warning,
)
from pathkit_sdk.masks import (
    GEOJSON_SUFFIXES,
    MASK_SUFFIXES,
    RASTER_SUFFIXES,
    RasterMask,
    check_within,
    class_list,
    frame_on_slide,
    positive_number,
    read_raster,
    reference_mask,
    resample,
    write_png,
)
from pathkit_sdk.reports import ReportRecords, find_json_file, read_json, read_report_records
from pathkit_sdk.splits import (
    SPLIT_PARTS,
    DrawnSplit,
    SplitManifest,
    SplitParams,
    SplitRecord,
    as_records,
    check_disjoint,
    check_user_split,
    draw_split,
    load_or_create_splits,
    load_or_draw_split,
    load_splits,
    make_splits,
    match_split_ids,
    patient_disjoint_split,
    read_split_file,
    split_part,
    stratified_patient_split,
    write_split_file,
)
from pathkit_sdk.synthetic import Blob, PenStroke, default_layout, write_synthetic_slide
from pathkit_sdk.tiles import iter_tile_batches, tile_loader

__all__ = [
    "as_records",
    "bar_chart",
    "Blob",
    "bootstrap_ci",
    "bootstrap_distribution",
    "bootstrap_statistic_ci",
    "bootstrap_statistics_ci",
    "CaseRows",
    "cell",
    "check_disjoint",
    "check_duplicates",
    "check_part_classes",
    "check_slide_mpps",
    "check_user_split",
    "check_within",
    "choose_split",
    "class_list",
    "class_order",
    "CliOption",
    "COHORT_OPTIONS",
    "cohort_rows",
    "CohortDataset",
    "CohortRow",
    "COLUMN_ALIASES",
    "column_split",
    "default_layout",
    "draw_split",
    "drawn_split",
    "DrawnSplit",
    "drop_missing_files",
    "file_split",
    "find_column",
    "find_json_file",
    "find_table",
    "frame_on_slide",
    "GEOJSON_SUFFIXES",
    "group_rows",
    "heatmap",
    "iter_tile_batches",
    "load_or_create_splits",
    "load_or_draw_split",
    "load_splits",
    "load_state_dict_checked",
    "make_splits",
    "MASK_SUFFIXES",
    "match_split_ids",
    "MIN_CASES",
    "MIN_CASES_PER_CLASS",
    "option",
    "parse_plain",
    "part_counts",
    "patient_disjoint_split",
    "PenStroke",
    "path_inside",
    "plain_name",
    "plausible_mpp",
    "positive_number",
    "proportion_ci",
    "PROPORTION_METHODS",
    "RASTER_SUFFIXES",
    "RasterMask",
    "read_json",
    "read_raster",
    "read_report_records",
    "read_split_file",
    "read_state_dict",
    "read_table",
    "REQUIRED",
    "reference_mask",
    "ReportRecords",
    "require_columns",
    "resample",
    "resample_indices",
    "resolve_file",
    "run_plain",
    "sample_facts",
    "SAMPLE_KEY",
    "small_sample_warning",
    "split_part",
    "SPLIT_PARTS",
    "split_statement",
    "SplitManifest",
    "SplitParams",
    "SplitRecord",
    "splits_folder",
    "state_dict_mismatches",
    "stratified_patient_split",
    "Table",
    "TABLE_SUFFIXES",
    "tile_loader",
    "typer_command",
    "write_png",
    "verify_sha256",
    "write_split_file",
    "write_synthetic_slide",
]
