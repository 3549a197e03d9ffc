"""What reruns when a slide encoder's inputs change, end to end through `pathkit run` (issue 40; in
the manner of tests/core/test_what_reruns.py): a slide-embedding probe (`tiny-titan` over
`tiny-vit` patch features) on a synthetic cohort, every stage observed from the files it writes
(the probe's fit, which writes no file of its own, from the calls to its `build`).

- an unchanged rerun redoes nothing;
- other slide-encoder weights: the slide embeddings, the probe's fit, the predictions and the
  scores are redone, the tiles and the patch features kept;
- other patch features (the patch encoder's weights): the patch features and everything after;
- one slide's content: that slide alone is tiled, extracted and embedded again, then refitted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

N = 8  # slides: 4 train, 2 val, 2 test


def _stamps(files) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in files if p.is_file()}


class Runner:
    """Runs the cell and says which stages wrote a file since the last run."""

    def __init__(self, workdir: Path, root: Path, patch_weights: Path, slide_weights: Path) -> None:
        self.workdir, self.root = workdir, root
        self.patch_weights, self.slide_weights = patch_weights, slide_weights
        self.before: dict[str, dict[str, int]] = {}
        self.changed: dict[str, set[str]] = {}
        self.fits = 0  # calls to the probe's build (its fit), counted by the test


    def _observed(self, run_dir: Path) -> dict[str, dict[str, int]]:
        return {"tile": _stamps(self.workdir.glob("tiles/*/*.parquet")),
                "extract": _stamps(self.workdir.glob("features/tiny-vit*/*.safetensors")),
                "slide": _stamps(self.workdir.glob("features/slide-embeddings/tiny-titan/*.safetensors")),
                "predict": _stamps([run_dir / "predictions.jsonl"]),
                "score": _stamps([run_dir / "metrics.json"])}

    def run(self) -> set[str]:
        from pathkit_core.run import RunSpec, run_pipeline

        values = {"dataset": "slides-csv", "dataset_root": self.root, "dataset_options": {"table": "cohort.csv"},
                  "encoder": "tiny-vit", "weights": self.patch_weights, "generator": "tiny-titan",
                  "hparams": {"weights": str(self.slide_weights)}, "workdir": self.workdir, "cpu": True,
                  "max_tiles": 8, "export_attention": False}
        fits = self.fits
        result = run_pipeline(RunSpec.from_mapping(values), log=lambda line: None)
        now = self._observed(result.run_dir)
        self.changed = {stage: {Path(p).stem for p, t in files.items() if self.before.get(stage, {}).get(p) != t}
                        for stage, files in now.items()}
        for stage, files in now.items():
            self.before.setdefault(stage, {}).update(files)
        return {stage for stage, names in self.changed.items() if names} | ({"fit"} if self.fits > fits else set())


def _cohort(root: Path) -> list[Path]:
    from tests.bench.suite._suite import write_cohort

    slides = [_slide(root / "slides" / f"S{k}.tiff", k) for k in range(N)]
    write_cohort(root / "cohort.csv", slides, lambda k: "pink" if k % 2 == 0 else "purple",
                 lambda k: "train" if k < 4 else "val" if k < 6 else "test")
    return slides


def _slide(path: Path, seed: int, colour=None) -> Path:
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide
    from tests.bench.suite._suite import PINK, PURPLE

    path.parent.mkdir(parents=True, exist_ok=True)
    write_synthetic_slide(path, width=384, height=384, mpp=1.0, seed=seed, compression="deflate",
                          tissue=[Blob(0.5, 0.5, 0.42, 0.4, colour=colour or (PINK if seed % 2 == 0 else PURPLE),
                                       texture="noise")])
    return path


def _weights(tmp_path: Path) -> tuple[list[Path], list[Path]]:
    """Two tiny-vit checkpoints and two tiny-titan checkpoints, each pair of other random weights."""
    import torch

    from pathkit_core.plugins import get_component

    patch = [get_component("encoder", "tiny-vit")().random_checkpoint(tmp_path / f"vit{s}.safetensors", seed=s)
             for s in (1, 2)]
    slide = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        path = tmp_path / f"titan{seed}.pt"
        torch.save(get_component("slide-encoder", "tiny-titan")().build().state_dict(), path)
        slide.append(path)
    return patch, slide


def test_slide_encoder_and_patch_feature_changes_rerun_exactly_what_reads_them(tmp_path, monkeypatch):
    from pathkit_generators.slide_probe import SlideEmbeddingProbe

    root = tmp_path / "cohort"
    slides = _cohort(root)
    patch, slide = _weights(tmp_path)
    r = Runner(tmp_path / "ws", root, patch[0], slide[0])
    build = SlideEmbeddingProbe.build

    def counted(self, spec):
        r.fits += 1
        return build(self, spec)

    monkeypatch.setattr(SlideEmbeddingProbe, "build", counted)
    everything = {"tile", "extract", "slide", "fit", "predict", "score"}
    after_slide = {"slide", "fit", "predict", "score"}
    names = {p.stem for p in slides}

    assert r.run() == everything
    assert r.changed["slide"] == names  # every case's slide embedding, kept in the feature store
    assert r.run() == set()  # unchanged: everything reused

    # the slide encoder's weights: embeddings recomputed for every slide, the probe refitted
    r.slide_weights = slide[1]
    assert r.run() == after_slide
    assert r.changed["slide"] == names
    r.slide_weights = slide[0]
    assert r.run() == set()  # back to the first weights: that run's results are still there, untouched

    # the patch features (the patch encoder's weights): extracted and embedded again, tiles kept
    r.patch_weights = patch[1]
    assert r.run() == {"extract", *after_slide}
    assert r.changed["slide"] == names
    assert r.run() == set()

    # one slide's content: that slide alone is tiled, extracted and embedded again
    _slide(slides[2], 100)
    assert r.run() == everything
    assert r.changed["tile"] == r.changed["extract"] == r.changed["slide"] == {"S2"}
