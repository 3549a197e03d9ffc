"""The synthetic PathoArgus miniature: slides whose tissue holds the answer, and planted evidence.

NOT pathology. Each synthetic case (one patient) has a site (the colour of its normal tissue)
and one lesion type (a colour and nucleus pattern of its own) and four slides (level-0 mpp 1.0,
so tiny-vit's 128 um tiles are 128 px):

- a "GR" slide (about 60 tissue tiles) mostly covered by the lesion;
- a small biopsy (about 16 tiles) of normal tissue with a lesion focus of about four tiles: the
  only place the lesion shows in the case's other slides;
- two large resections (about 300 tiles each) of normal tissue.

Questions, in the PathoArgus capabilities this miniature mimics:
- GR (one slide): "What is the predominant lesion in this slide?" over the GR slide;
- CSI (several slides, the evidence in one): "Which lesion is present in this case?" over the
  biopsy and both resections in a random order;
- ESG (quartets): "Which candidate set contains <lesion>?" over three candidate sets of two
  slides (a case's biopsy and first resection): the target case sits in set 1, 2 or 3, or in
  none (a third donor takes its place); donors come from the same split with another lesion
  (and another site where one exists); the choices "Set 1", "Set 2", "Set 3", "None of the
  sets" are permuted once per quartet, so its four rows share question, choices and capacities.

Answer positions are balanced per split and capability (GR and CSI by rotation; an ESG quartet
uses each position once). The planted evidence is written with each row (`evidence`): the
lesion's box (80% of the lesion focus's bounding box) on the slide that shows it, a selected tile
showing it when a quarter of the tile lies in the box, or for an ESG absence row every candidate
set. The protocol of the miniature (protocol.json): K = 16 of the N = 60-950 features of a
question and M = 48 candidates, so that, as on PathoArgus-Bench (K = 512, median N 27k, up to
388,637 for M = 10,000), a few percent of the features reach the reader and the candidate limit
cuts deep into the large cases.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError
from pathkit_core.workspace import atomic_write_json, atomic_write_text
from pathkit_datasets._demo_build import already_built, write_slides

DEMO_VERSION = 4
MPP = 1.0
TILE_PX = 128
PROTOCOL = {"budget": 16, "candidates": 48}
# (name, normal-tissue colour)
SITES: tuple[tuple[str, tuple[int, int, int]], ...] = (
    ("breast", (232, 160, 205)), ("lung", (214, 138, 160)), ("kidney", (226, 150, 140)))
# (name, colour, nuclei per 100 um^2, nucleus radius um); each at least as saturated as normal tissue (the
# Otsu tissue mask keeps it) and none blue-cyan-green (the pen-mark rule would remove it)
LESIONS: tuple[tuple[str, tuple[int, int, int], float, float], ...] = (
    ("adenocarcinoma", (110, 55, 150), 2.0, 3.5),
    ("squamous carcinoma", (200, 80, 110), 1.2, 5.0),
    ("lymphoma", (90, 60, 170), 3.0, 2.5),
    ("mucinous tumour", (150, 110, 210), 0.4, 3.0),
    ("sarcoma", (200, 110, 60), 1.5, 4.0),
    ("melanoma", (95, 60, 45), 1.8, 4.5),
)
ESG_CHOICES = ("Set 1", "Set 2", "Set 3", "None of the sets")
GR_QUESTION = "What is the predominant lesion in this slide?"
CSI_QUESTION = "Which lesion is present in this case?"
ESG_QUESTION = "Which candidate set contains {lesion}?"

# slide kind -> (side in px, tissue radius as a fraction of the side)
SLIDE_KINDS = {"gr": (1408, 0.40), "bx": (768, 0.38), "r1": (2700, 0.463), "r2": (2700, 0.463)}
GR_LESION_RADIUS = 0.32
FOCUS_RADIUS_PX = 180.0
EVIDENCE_SHRINK = 0.8
# a selected tile shows the lesion when a quarter of it lies in the evidence box
MIN_OVERLAP = 0.25


def parse_counts(text: Any) -> tuple[int, int, int]:
    try:
        counts = tuple(int(v) for v in str(text).split(","))
    except ValueError:
        counts = ()
    if len(counts) != 3 or min(counts) < 4:
        raise PathkitError(f"pathoargus demo: demo_cases={text!r} must be three counts train,val,test of at least 4 "
                           "cases each (an ESG quartet needs three donor cases)")
    return counts  # type: ignore[return-value]


def _box(cx: float, cy: float, radius: float) -> list[float]:
    half = radius * EVIDENCE_SHRINK
    return [round(cx - half, 1), round(cy - half, 1), round(cx + half, 1), round(cy + half, 1)]


def _plan_case(case_id: str, lesion: int, rng: random.Random) -> dict[str, Any]:
    site = rng.randrange(len(SITES))
    side, radius = SLIDE_KINDS["bx"]
    room = radius * side - FOCUS_RADIUS_PX
    angle, dist = rng.uniform(0, 2 * math.pi), rng.uniform(0, room * 0.8)
    fx, fy = side / 2 + dist * math.cos(angle), side / 2 + dist * math.sin(angle)
    gr_side = SLIDE_KINDS["gr"][0]
    return {"case": case_id, "site": site, "lesion": lesion, "focus": [fx, fy],
            "focus_box": _box(fx, fy, FOCUS_RADIUS_PX),
            "gr_box": _box(gr_side / 2, gr_side / 2, GR_LESION_RADIUS * gr_side),
            "slides": {kind: f"slides/{case_id}_{kind}.tiff" for kind in SLIDE_KINDS},
            "seed": rng.randrange(1 << 30)}


def _slide_job(job: dict[str, Any]) -> str:
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    path = Path(job["path"])
    if path.exists():
        return path.name  # finished by an interrupted build (writes are atomic)
    side, radius = SLIDE_KINDS[job["kind"]]
    normal = SITES[job["site"]][1]
    name, colour, density, nucleus = LESIONS[job["lesion"]]
    blobs = [Blob(0.5, 0.5, radius, radius, colour=normal, texture="nuclei", nuclei_density=0.5,
                  nucleus_radius_um=3.0)]
    lesion = dict(colour=colour, texture="nuclei", nuclei_density=density, nucleus_radius_um=nucleus)
    if job["kind"] == "gr":
        blobs.append(Blob(0.5, 0.5, GR_LESION_RADIUS, GR_LESION_RADIUS, **lesion))
    elif job["kind"] == "bx":
        fx, fy = job["focus"]
        blobs.append(Blob(fx / side, fy / side, FOCUS_RADIUS_PX / side, FOCUS_RADIUS_PX / side, **lesion))
    write_synthetic_slide(path, width=side, height=side, mpp=MPP, tissue=blobs, seed=job["seed"])
    return path.name


def _rotating_answer(choices_pool: list[str], right: str, position: int, rng: random.Random) -> tuple[list[str], int]:
    others = [c for c in choices_pool if c != right]
    rng.shuffle(others)
    choices = others[:3]
    choices.insert(position % 4, right)
    return choices, position % 4


def _donors(target: dict[str, Any], cases: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    others = [c for c in cases if c["lesion"] != target["lesion"]]
    if len(others) < 3:
        raise PathkitError(f"pathoargus demo: case {target['case']} has fewer than three donor cases with another "
                           "lesion in its split; use more demo cases")
    rng.shuffle(others)
    # PathoArgus donors come from another anatomic site: prefer those, fall back when too few
    others.sort(key=lambda c: c["site"] == target["site"])
    return others[:3]


def _esg_set(case: dict[str, Any], order: list[int]) -> list[str]:
    pair = [case["slides"]["bx"], case["slides"]["r1"]]
    return [pair[i] for i in order]


def plan_questions(cases_by_split: dict[str, list[dict[str, Any]]], rng: random.Random) -> list[dict[str, Any]]:
    """Every question row of the miniature (the questions.jsonl records)."""
    names = [lesion[0] for lesion in LESIONS]
    rows: list[dict[str, Any]] = []
    for split, cases in cases_by_split.items():
        pair_order = {c["case"]: rng.sample([0, 1], 2) for c in cases}
        for k, case in enumerate(cases):
            lesion = names[case["lesion"]]
            choices, answer = _rotating_answer(names, lesion, k, rng)
            rows.append({"id": f"{case['case']}-GR", "patient_id": case["case"], "split": split,
                         "capability": "GR", "question": GR_QUESTION, "choices": choices, "answer": answer,
                         "candidate_sets": [[case["slides"]["gr"]]],
                         "evidence": {"regions": [{"slide": 0, "box": case["gr_box"]}], "min_overlap": MIN_OVERLAP}})
            order = rng.sample(["bx", "r1", "r2"], 3)
            choices, answer = _rotating_answer(names, lesion, k + 1, rng)
            rows.append({"id": f"{case['case']}-CSI", "patient_id": case["case"], "split": split,
                         "capability": "CSI", "question": CSI_QUESTION, "choices": choices, "answer": answer,
                         "candidate_sets": [[case["slides"][s] for s in order]],
                         "evidence": {"regions": [{"slide": order.index("bx"), "box": case["focus_box"]}],
                                      "min_overlap": MIN_OVERLAP}})
            donors = _donors(case, cases, rng)
            esg_choices = list(ESG_CHOICES)
            rng.shuffle(esg_choices)
            for condition, where in (("set1", 0), ("set2", 1), ("set3", 2), ("absent", None)):
                members = list(donors[:2])
                if where is None:
                    members.append(donors[2])
                    right = "None of the sets"
                    evidence: dict[str, Any] = {"sets": [0, 1, 2]}
                else:
                    members.insert(where, case)
                    right = ESG_CHOICES[where]
                    slide = 2 * where + pair_order[case["case"]].index(0)
                    evidence = {"regions": [{"slide": slide, "box": case["focus_box"]}], "min_overlap": MIN_OVERLAP}
                rows.append({"id": f"{case['case']}-ESG-{condition}", "patient_id": case["case"], "split": split,
                             "capability": "ESG", "group": f"{case['case']}-ESG", "condition": condition,
                             "question": ESG_QUESTION.format(lesion=lesion), "choices": esg_choices,
                             "answer": esg_choices.index(right),
                             "candidate_sets": [_esg_set(m, pair_order[m["case"]]) for m in members],
                             "evidence": evidence})
    return rows


def build_demo(folder: Path, counts: tuple[int, int, int], *, workers: int = 2, seed: int = 0) -> Path:
    """Write the slides, questions.jsonl, protocol.json and (last) demo.json into `folder`."""
    marker = folder / "demo.json"
    facts = {"version": DEMO_VERSION, "cases": list(counts), "seed": seed}
    if already_built(marker, facts):
        return folder
    rng = random.Random(seed)
    cases_by_split: dict[str, list[dict[str, Any]]] = {}
    serial = 0
    for split, n in zip(("train", "val", "test"), counts, strict=True):
        cases_by_split[split] = []
        first = rng.randrange(len(LESIONS))
        for k in range(n):
            serial += 1
            # lesions rotate within a split, so every split holds each lesion and ESG donors exist
            cases_by_split[split].append(_plan_case(f"SYN-{serial:04d}", (first + k) % len(LESIONS), rng))
    rows = plan_questions(cases_by_split, rng)
    (folder / "slides").mkdir(parents=True, exist_ok=True)
    jobs = [{"path": str(folder / case["slides"][kind]), "kind": kind, "site": case["site"],
             "lesion": case["lesion"], "focus": case["focus"], "seed": case["seed"] + i}
            for cases in cases_by_split.values() for case in cases for i, kind in enumerate(SLIDE_KINDS)]
    write_slides(_slide_job, jobs, workers)
    atomic_write_text(folder / "questions.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    atomic_write_json(folder / "protocol.json", PROTOCOL)
    atomic_write_json(marker, facts)
    return folder
