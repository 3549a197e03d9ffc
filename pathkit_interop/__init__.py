"""Interchange with other tools' formats, shipped in the `pathkit` distribution outside the core
and registered through its `pathkit` entry point like any plugin:

- `h5`: reading CLAM, TRIDENT and STAMP h5 feature files; `torch_files`: GOLDMARK-style torch
  feature files (both answer the core's `read_feature_file` hook, so such files can be case
  inputs);
- `feature_exchange` and `cli`: `pathkit features import|export` between those h5 files and the
  feature store;
- `records` and `score_cli`: `pathkit score`, scoring prediction files written elsewhere (REG JSON,
  JSONL, PathBench JSON, folders of per-case files) against references with any metric;
- `evaluate_modules`: any pathkit metric as a local Hugging Face `evaluate` module.
"""

from __future__ import annotations

from pathkit_core import hookimpl


@hookimpl
def register_commands(app):
    from pathkit_interop import cli, score_cli

    cli.register(app)
    score_cli.register(app)


@hookimpl
def plain_commands():
    return {"score": "pathkit_interop.score_cli:run_plain"}


@hookimpl
def read_feature_file(path, mpp):
    suffix = path.suffix.lower()
    if suffix in (".h5", ".hdf5"):
        from pathkit_interop.h5 import read_h5_features

        return read_h5_features(path, mpp=mpp)
    from pathkit_interop.torch_files import TORCH_SUFFIXES, read_torch_features

    if suffix in TORCH_SUFFIXES:
        return read_torch_features(path)
    return None
