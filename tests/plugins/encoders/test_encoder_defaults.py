"""Each encoder's authors' magnification and tile size are what pathkit uses by default (issue
40, item 1): stated by `pathkit info`, used by the run's tiling, and a tiling override that differs
is warned, not silent (the run's tiling and extraction of two small slides: a slow test, in make
test-suite)."""

from __future__ import annotations

import json
import warnings

import pytest

from pathkit_core.contracts import Case
from pathkit_core.plugins import get_component, get_plugin_manager

pytest.importorskip("pathkit_encoders")

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_every_encoder_states_its_authors_tile_spec(cli):
    for name in get_plugin_manager().names("encoder"):
        cls = get_component("encoder", name)
        d = cls.describe()
        assert (d["tile_px"], d["mpp"], d["magnification"]) == (
            cls.tile_spec.tile_px, cls.tile_spec.mpp, cls.tile_spec.magnification), name
    info = json.loads(cli("info", "conch15", "--json").stdout)[0]
    assert (info["tile_px"], info["magnification"], info["parameters"]) == (512, "20x", 306_109_184)


@pytest.fixture(scope="module")
def two_slides(tmp_path_factory):
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    root = tmp_path_factory.mktemp("slides")
    return [write_synthetic_slide(root / f"s{i}.tiff", width=384, height=384, mpp=0.5, seed=i,
                                  tissue=[Blob(0.5, 0.5, 0.45, 0.45, texture="noise")]) for i in range(2)]


def _run(two_slides, workdir, tiling):
    from pathkit_core.features.store import read_feature_meta
    from pathkit_core.run.features import _slide_inputs
    from pathkit_core.run.spec import RunSpec

    spec = RunSpec(dataset="d", encoder="tiny-vit", generator="g", workdir=workdir)
    cases = [Case(case_id=f"c{i}", patient_id=f"p{i}", slides=(p,), target="a") for i, p in enumerate(two_slides)]
    encoder = get_component("encoder", "tiny-vit")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        usable, failed = _slide_inputs(spec, encoder, workdir, cases, tiling, log=lambda _: None)
    assert not failed and len(usable) == 2
    meta = read_feature_meta(next(iter(usable.values())))
    return meta, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.slow
def test_the_run_tiles_at_the_encoders_spec_and_warns_when_an_override_differs(two_slides, tmp_path):
    meta, warned = _run(two_slides, tmp_path / "default", {})
    assert (meta["tile_px"], float(meta["target_mpp"])) == ("128", 1.0)  # tiny-vit's row: 128 px at 1 mpp (10x)
    assert not [w for w in warned if "expects" in w]
    meta, warned = _run(two_slides, tmp_path / "override", {"tile_px": 64, "target_mpp": 2.0})
    assert (meta["tile_px"], meta["encoder_tile_px"], float(meta["encoder_mpp"])) == ("64", "128", 1.0)
    assert any("encoder 'tiny-vit' expects 128 px tiles at 1 mpp; the manifests have 64 px at 2 mpp" in w
               for w in warned), warned
