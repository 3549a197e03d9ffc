"""The synthetic PathoArgus miniature end to end (slow: it builds 256 slides and extracts 42,432 tiles):
`pathoargus` routing keeps the planted evidence of CSI and ESG questions accessible where `flat-topk`
loses it, and the attention reader on its selections beats the same reader on flat-topk selections,
the text-only control and the majority position."""

from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("installed_registry")]


def _run(workdir, generator, **options):
    from pathkit_core.run import RunSpec, run_pipeline

    spec = RunSpec(dataset="pathoargus", encoder="tiny-vit", generator=generator, workdir=workdir, cpu=True,
                   dataset_options=options)
    result = run_pipeline(spec, log=lambda _: None)
    return json.loads((result.run_dir / "metrics.json").read_text())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield tmp_path_factory.mktemp("pathoargus-demo")
    torch.set_num_threads(before)


def test_routing_keeps_evidence_and_the_reader_uses_it(workdir):
    routed = _run(workdir, "attention-reader", selector="pathoargus")
    flat = _run(workdir, "attention-reader", selector="flat-topk")
    text_only = _run(workdir, "text-only")
    scores = routed["metrics"]["vqa"]
    for capability in ("CSI", "ESG"):
        kept = scores[f"evidence_accessibility@pathoargus:{capability}"]
        lost = scores[f"evidence_accessibility@flat-topk:{capability}"]
        assert kept >= lost + 0.2, (capability, kept, lost)
    # the audit measures every selector on the same questions, whichever the run uses
    assert flat["metrics"]["vqa"]["evidence_accessibility@pathoargus"] == scores["evidence_accessibility@pathoargus"]
    overall = {"pathoargus": scores["Overall"], "flat-topk": flat["metrics"]["vqa"]["Overall"],
               "text-only": text_only["metrics"]["vqa"]["Overall"],
               "majority-position": routed["baselines"]["majority-position"]["vqa"]["Overall"]}
    assert overall["pathoargus"] > overall["flat-topk"] > overall["text-only"], overall
    assert overall["pathoargus"] > overall["majority-position"] + 0.2, overall
    assert routed["budget"]["budget_K"] == 16 and routed["budget"]["retention"] < 0.05
