"""An edited tissue mask reruns what it feeds: the slide's tiles, its features and everything after
them; the other slides' tiles and features are kept (docs/wsi.md, "A tissue mask a person can
correct"). In the style of `test_what_reruns`, whose cohort and runner it uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core._toy import ComponentPlugin
from tests.core.test_run_identity import Accuracy, Head, _weighted_encoder
from tests.core.test_what_reruns import EVERYTHING, Cohort, Runner, cohort, weights  # noqa: F401 - fixtures


def _erase_outside(contour: Path, target: Path, x1: float) -> None:
    from shapely.geometry import box, mapping

    from pathkit_core.wsi.masks import read_geojson

    kept = read_geojson(contour).geometry.intersection(box(0, 0, x1, 10_000))
    parts = list(getattr(kept, "geoms", [kept]))
    target.write_text(json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": mapping(p), "properties": {"objectType": "annotation"}} for p in parts]}))


@pytest.mark.slow  # five pipeline runs over eight slides (about 25 s on two cores)
def test_an_edited_tissue_mask_retiles_its_slide_and_reruns_everything_downstream(
        fresh_registry, cohort, weights, tmp_path, monkeypatch):  # noqa: F811 - fixtures
    fresh_registry({"rr": ComponentPlugin(Cohort, _weighted_encoder(), Head, Accuracy)})
    monkeypatch.setattr(Head, "default_train", dict(Head.default_train))
    masks = tmp_path / "masks"
    masks.mkdir()
    r = Runner(tmp_path / "ws", cohort, weights[0])
    tiling = {"tissue_geojson": str(masks)}
    assert r.run(tiling=tiling)[0] == EVERYTHING  # no mask drawn yet: every slide segmented
    assert r.run(tiling=tiling)[0] == set()

    # a person corrects s0's mask (the contours tiling wrote, the right part erased)
    written = next(r.workdir.glob("tiles/*/s0.tissue.geojson"))
    tiles_before = dict(r.before["tile"])
    _erase_outside(written, masks / "s0.geojson", 300)
    assert r.run(tiling=tiling)[0] == EVERYTHING
    changed = {Path(p).stem for p, t in r.before["tile"].items() if tiles_before.get(p) != t}
    assert changed == {"s0"}
    from pathkit_core.wsi.manifest import read_manifest, read_manifest_meta

    manifest = next(r.workdir.glob("tiles/*/s0.parquet"))
    assert read_manifest_meta(manifest)["segmentation"]["segmenter"] == "geojson"
    assert (read_manifest(manifest).coords()[:, 0] < 300).all()
    assert r.run(tiling=tiling)[0] == set()  # the same edit again: nothing

    # edited once more: again
    _erase_outside(written, masks / "s0.geojson", 200)
    assert r.run(tiling=tiling)[0] == EVERYTHING
