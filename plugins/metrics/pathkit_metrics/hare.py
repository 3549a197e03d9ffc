"""The `hare` metric: HARE (Kim et al. 2025), entity and relation alignment of histopathology reports.

Pipeline (paper; public code knowlab/HARE): a token-classification model (HARE-NER,
fine-tuned GatorTronS) finds entities, kept when their confidence exceeds 0.7; a sequence
classifier (HARE-RE) reads the report with one ordered entity pair marked
`[E1]head[/E1] ... [E2]tail[/E2]` and keeps the pair as a relation when its probability
exceeds 0.7; an embedding model (HARE-alignment) embeds entity strings (CLS vector), and
entity precision/recall are the mean best cosine similarity of each predicted/reference
entity to the other side. Relation F1 is by exact (head, tail, label) match.

Scores: the paper's HARE = F1_entity + F1_relation in [0, 2], and the public code's
0.5 * F1_entity + 0.5 * F1_relation (`HARE-avg`), both components alongside.

Fixed relative to the public code: entity offsets come from the original text (the
NER pipeline's own striding), not from re-decoded chunks; the markers are placed by
position, so a tail that precedes its head is marked correctly; all pairs of a corpus are
scored in padded batches instead of one 512-token model call per pair; a pair too far
apart to fit one model window is not scored (counted per case) instead of having its
markers silently truncated away.

Models are found from explicit paths (options `ner_model`, `re_model`, `alignment_model`,
`hare_dir`), the `PATHKIT_HARE_DIR` folder (subfolders `HARE-NER`, `HARE-RE`,
`HARE-alignment`) or the Hugging Face cache; nothing is downloaded unless the option
`allow_download` is true and HF_HUB_OFFLINE is unset. Without them the metric raises a
PathkitError saying where it looked; there is no substitute model.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import DatasetOption, Metric, MetricResult, PathkitError
from pathkit_metrics._text_inputs import (
    metric_options,
    option_bool,
    option_number,
    validate_report_pairs,
)
from pathkit_tasks import TASK_REPORT

if TYPE_CHECKING:
    import numpy as np

ENV_HARE_DIR = "PATHKIT_HARE_DIR"
HUB_IDS = {
    "ner": "knowlab-research/HARE-NER",
    "re": "knowlab-research/HARE-RE",
    "alignment": "knowlab-research/HARE-alignment",
}
ENTITY_THRESHOLD = 0.7
RELATION_THRESHOLD = 0.7
NO_RELATION = "NO_REL"
# HARE-RE was trained with num_labels=2 and this mapping (public re_trainer.py); its config
# may only carry the default LABEL_0/LABEL_1 names.
DEFAULT_RELATION_LABELS = {0: NO_RELATION, 1: "Relation"}
ALIGNMENT_MAX_LENGTH = 30
MODEL_MAX_LENGTH = 512
NER_STRIDE = 64
MARKERS = ("[E1]", "[/E1]", "[E2]", "[/E2]")
# Which entities relations are sought between: "thresholded" (the paper's recipe: entities above
# `entity_threshold`) or "all" (the public code's evaluate(): every entity the NER model returns).
RELATION_ENTITIES = ("thresholded", "all")
DEFAULT_BATCH_SIZE = 32
DEFAULT_MAX_RELATION_PAIRS = 50_000
OPTIONS: tuple[DatasetOption, ...] = (
    DatasetOption("ner_model", "str", None, "NER model folder or hub id"),
    DatasetOption("re_model", "str", None, "relation model folder or hub id"),
    DatasetOption("alignment_model", "str", None, "embedding model folder or hub id"),
    DatasetOption("hare_dir", "str", None, "folder holding the three HARE models"),
    DatasetOption("allow_download", "bool", False, "allow downloading the models from the hub"),
    DatasetOption("device", "str", "auto", "auto, cpu, cuda, cuda:1"),
    DatasetOption("batch_size", "int", DEFAULT_BATCH_SIZE, "texts per forward pass"),
    DatasetOption("entity_threshold", "float", ENTITY_THRESHOLD, "entity score threshold"),
    DatasetOption("relation_threshold", "float", RELATION_THRESHOLD, "relation score threshold"),
    DatasetOption("relation_entities", "|".join(RELATION_ENTITIES), "thresholded",
                  "entities relations are sought between"),
    DatasetOption("max_relation_pairs", "int", DEFAULT_MAX_RELATION_PAIRS, "entity pairs per report at most"),
)


class HareUnavailable(PathkitError):
    """The HARE models cannot be found or loaded."""


@dataclass(frozen=True)
class Entity:
    """An entity found by HARE-NER: its text as the tokenizer renders it, span in the report."""

    word: str
    start: int
    end: int
    score: float
    label: str = ""


@dataclass
class ReportAnalysis:
    """What HARE extracted from one report."""

    entities: list[Entity] = field(default_factory=list)
    relations: set[tuple[str, str, str]] = field(default_factory=set)
    pairs_out_of_reach: int = 0


# --------------------------------------------------------------------------- marking


def mark_entity_pair(text: str, head: tuple[int, int], tail: tuple[int, int]) -> str:
    """`text` with `[E1]..[/E1]` around the head span and `[E2]..[/E2]` around the tail span.

    Markers are placed by position, whichever entity comes first; at one position a closing
    marker goes before an opening one, so adjacent entities stay well nested.
    """
    (hs, he), (ts, te) = head, tail
    if not (0 <= hs <= he <= len(text) and 0 <= ts <= te <= len(text)):
        raise ValueError(f"entity span out of range: head {head}, tail {tail}, text of {len(text)}")
    # (position, 0 = closing first, order of insertion) for a stable, nested result
    inserts = sorted(
        [(hs, 1, 0, "[E1]"), (he, 0, 1, "[/E1]"), (ts, 1, 2, "[E2]"), (te, 0, 3, "[/E2]")]
    )
    pieces: list[str] = []
    previous = 0
    for position, _, _, marker in inserts:
        pieces.append(text[previous:position])
        pieces.append(marker)
        previous = position
    pieces.append(text[previous:])
    return "".join(pieces)


# --------------------------------------------------------------------------- model location


def _valid_model_dir(path: Path) -> bool:
    return path.is_dir() and (path / "config.json").is_file()


def _in_base_dirs(base_dirs: list[tuple[str, Path]], repo_name: str, hub_id: str, looked: list[str]) -> Path | None:
    """The first model folder `<base>/<repo name>` or `<base>/<hub id>`; each base looked in
    without one is added to `looked`."""
    for label, base in base_dirs:
        for candidate in (base / repo_name, base / hub_id):
            if _valid_model_dir(candidate):
                return candidate
        looked.append(f"{label}={base} (no {repo_name}/ with config.json)")
    return None


def resolve_model_dirs(options: Mapping[str, Any]) -> dict[str, Path]:
    """Local folders of the three HARE models, or HareUnavailable naming every place looked in."""
    allow_download = option_bool(options, "allow_download", False, "hare")
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}
    base_dirs: list[tuple[str, Path]] = []
    if options.get("hare_dir"):
        base_dirs.append(("option hare_dir", Path(str(options["hare_dir"])).expanduser()))
    if os.environ.get(ENV_HARE_DIR):
        base_dirs.append((ENV_HARE_DIR, Path(os.environ[ENV_HARE_DIR]).expanduser()))

    found: dict[str, Path] = {}
    missing: list[str] = []
    for component, hub_id in HUB_IDS.items():
        repo_name = hub_id.split("/", 1)[1]
        looked: list[str] = []
        explicit = options.get(f"{component}_model")
        if explicit:
            path = Path(str(explicit)).expanduser()
            if _valid_model_dir(path):
                found[component] = path
                continue
            if path.exists() or "/" not in str(explicit) or str(explicit).startswith((".", "/", "~")):
                raise HareUnavailable(
                    f"hare: option {component}_model={explicit}: not a model folder with config.json"
                )
            hub_id = str(explicit)  # a hub id given explicitly
            looked.append(f"option {component}_model")
        hit = _in_base_dirs(base_dirs, repo_name, hub_id, looked)
        if hit is None:
            hit = _from_hf_cache(hub_id)
            if hit is None:
                looked.append(f"the Hugging Face cache {hf_cache_dir()} (no {hub_id})")
        if hit is None and allow_download and not offline:
            hit = _download(hub_id)
        if hit is None:
            missing.append(f"{hub_id}: looked in " + "; ".join(looked))
        else:
            found[component] = hit
    if missing:
        if allow_download and offline:
            how = "HF_HUB_OFFLINE is set, so nothing was downloaded"
        elif allow_download:
            how = "download failed"
        else:
            how = "downloads are off (option allow_download=true enables them)"
        raise HareUnavailable(
            "hare is unavailable: model(s) not found. "
            + " | ".join(missing)
            + f". Provide the folders with option hare_dir or {ENV_HARE_DIR} "
            "(subfolders HARE-NER, HARE-RE, HARE-alignment), or per-model options "
            f"ner_model/re_model/alignment_model; {how}."
        )
    return found


def hf_cache_dir() -> str:
    """The Hugging Face hub cache, read from the environment at call time (HF_HUB_CACHE, HF_HOME)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return os.path.join(os.environ["HF_HOME"], "hub")
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def _from_hf_cache(hub_id: str) -> Path | None:
    try:
        from huggingface_hub import snapshot_download

        path = Path(snapshot_download(hub_id, local_files_only=True, cache_dir=hf_cache_dir()))
    except Exception:  # noqa: BLE001 - any failure means "not cached"
        return None
    return path if _valid_model_dir(path) else None


def _download(hub_id: str) -> Path | None:
    try:
        from huggingface_hub import snapshot_download

        path = Path(snapshot_download(hub_id, cache_dir=hf_cache_dir()))
    except Exception as exc:  # noqa: BLE001
        raise HareUnavailable(f"hare: downloading {hub_id} failed: {exc}") from exc
    return path if _valid_model_dir(path) else None


# --------------------------------------------------------------------------- models


class HareModels:
    """The three loaded HARE models and the extraction steps that use them."""

    def __init__(self, model_dirs: Mapping[str, Path], device: str = "auto") -> None:
        try:
            import torch
            from transformers import (
                AutoModel,
                AutoModelForSequenceClassification,
                AutoModelForTokenClassification,
                AutoTokenizer,
                pipeline,
            )
        except ImportError as exc:
            raise HareUnavailable(f"hare needs torch and transformers ({exc}); pip install transformers") from exc

        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.model_dirs = dict(model_dirs)
        self.lock = threading.Lock()
        try:
            ner_tokenizer = AutoTokenizer.from_pretrained(model_dirs["ner"])
            ner_model = AutoModelForTokenClassification.from_pretrained(model_dirs["ner"])
            self.re_tokenizer = AutoTokenizer.from_pretrained(model_dirs["re"])
            self.re_model = AutoModelForSequenceClassification.from_pretrained(model_dirs["re"])
            self.align_tokenizer = AutoTokenizer.from_pretrained(model_dirs["alignment"])
            self.align_model = AutoModel.from_pretrained(model_dirs["alignment"])
        except Exception as exc:  # noqa: BLE001 - report which folder failed and why
            raise HareUnavailable(f"hare: loading the models from {self.model_dirs} failed: {exc}") from exc
        if not ner_tokenizer.is_fast or not self.re_tokenizer.is_fast:
            raise HareUnavailable(
                "hare: the HARE-NER and HARE-RE tokenizers must be fast tokenizers (tokenizer.json "
                "or a vocab.txt that transformers converts), for character offsets"
            )
        for tokenizer, model in ((ner_tokenizer, ner_model), (self.re_tokenizer, self.re_model)):
            limit = getattr(model.config, "max_position_embeddings", MODEL_MAX_LENGTH) or MODEL_MAX_LENGTH
            tokenizer.model_max_length = min(int(tokenizer.model_max_length or limit), int(limit), MODEL_MAX_LENGTH)
        ner_model.to(self.device).eval()
        self.re_model.to(self.device).eval()
        self.align_model.to(self.device).eval()
        self.ner = pipeline(
            "token-classification",
            model=ner_model,
            tokenizer=ner_tokenizer,
            aggregation_strategy="average",
            device=self.device,
        )
        labels = {int(k): str(v) for k, v in (self.re_model.config.id2label or {}).items()}
        if not labels or all(v.startswith("LABEL_") for v in labels.values()):
            labels = dict(DEFAULT_RELATION_LABELS)
        self.relation_labels = labels
        self.marker_tokens = sum(
            len(self.re_tokenizer.tokenize(m, add_special_tokens=False)) for m in MARKERS
        )
        self.re_specials = self.re_tokenizer.num_special_tokens_to_add(pair=False)

    # ---- entities
    def extract_entities(self, texts: Sequence[str], threshold: float, batch_size: int) -> list[list[Entity]]:
        """Entities of each text with confidence above `threshold`, spans on the original text."""
        out: list[list[Entity]] = [[] for _ in texts]
        todo = [i for i, text in enumerate(texts) if text.strip()]
        if not todo:
            return out
        stride = min(NER_STRIDE, max(0, self.ner.tokenizer.model_max_length // 4))
        results = self.ner([texts[i] for i in todo], batch_size=batch_size, stride=stride)
        if todo and isinstance(results, list) and results and isinstance(results[0], dict):
            results = [results]
        for index, found in zip(todo, results, strict=True):
            for raw in found:
                score = float(raw.get("score", 0.0))
                if score > threshold and raw.get("start") is not None:
                    out[index].append(
                        Entity(
                            word=str(raw["word"]),
                            start=int(raw["start"]),
                            end=int(raw["end"]),
                            score=score,
                            label=str(raw.get("entity_group", raw.get("entity", ""))),
                        )
                    )
        return out

    # ---- relations
    def _pair_inputs(
        self, text: str, entities: Sequence[Entity], offsets: list[tuple[int, int]] | None
    ) -> tuple[list[tuple[int, int]], list[str], int]:
        """Marked inputs for every ordered entity pair of one text that fits one model window."""
        budget = self.re_tokenizer.model_max_length - self.re_specials - self.marker_tokens
        pairs: list[tuple[int, int]] = []
        marked: list[str] = []
        out_of_reach = 0
        for i, head in enumerate(entities):
            for j, tail in enumerate(entities):
                if i == j:
                    continue
                if offsets is None:  # the whole text fits
                    marked.append(mark_entity_pair(text, (head.start, head.end), (tail.start, tail.end)))
                    pairs.append((i, j))
                    continue
                window = _token_window(offsets, min(head.start, tail.start), max(head.end, tail.end), budget)
                if window is None:
                    out_of_reach += 1
                    continue
                lo, hi = window
                piece = text[lo:hi]
                marked.append(
                    mark_entity_pair(
                        piece, (head.start - lo, head.end - lo), (tail.start - lo, tail.end - lo)
                    )
                )
                pairs.append((i, j))
        return pairs, marked, out_of_reach

    def extract_relations(
        self,
        texts: Sequence[str],
        entities: Sequence[Sequence[Entity]],
        threshold: float,
        batch_size: int,
        max_pairs: int,
    ) -> tuple[list[set[tuple[str, str, str]]], list[int]]:
        """Relations (head word, tail word, label) of each text, all pairs scored in batches."""
        import torch

        relations: list[set[tuple[str, str, str]]] = [set() for _ in texts]
        out_of_reach = [0 for _ in texts]
        owners: list[tuple[int, int, int]] = []
        inputs: list[str] = []
        budget = self.re_tokenizer.model_max_length - self.re_specials - self.marker_tokens
        for t, (text, ents) in enumerate(zip(texts, entities, strict=True)):
            if len(ents) < 2:
                continue
            n_pairs = len(ents) * (len(ents) - 1)
            if n_pairs > max_pairs:
                raise PathkitError(
                    f"hare: a report has {len(ents)} entities, {n_pairs} ordered pairs, over the limit "
                    f"of {max_pairs} (option max_relation_pairs)"
                )
            encoding = self.re_tokenizer(
                text, add_special_tokens=False, return_offsets_mapping=True, verbose=False
            )
            token_offsets = [tuple(o) for o in encoding["offset_mapping"]]
            offsets = None if len(token_offsets) <= budget else token_offsets
            pairs, marked, skipped = self._pair_inputs(text, ents, offsets)
            out_of_reach[t] = skipped
            owners.extend((t, i, j) for i, j in pairs)
            inputs.extend(marked)
        for begin in range(0, len(inputs), batch_size):
            batch = self.re_tokenizer(
                inputs[begin : begin + batch_size],
                padding=True,
                truncation=True,
                max_length=self.re_tokenizer.model_max_length,
                return_tensors="pt",
            ).to(self.device)
            with torch.no_grad():
                probabilities = torch.softmax(self.re_model(**batch).logits.float(), dim=-1)
            best_prob, best = probabilities.max(dim=-1)
            for (t, i, j), prob, label_id in zip(
                owners[begin : begin + batch_size], best_prob.tolist(), best.tolist(), strict=True
            ):
                label = self.relation_labels.get(int(label_id), str(label_id))
                if prob > threshold and label != NO_RELATION:
                    relations[t].add((entities[t][i].word, entities[t][j].word, label))
        return relations, out_of_reach

    # ---- embeddings
    def embed(self, words: Sequence[str], batch_size: int) -> np.ndarray:
        """L2-normalised CLS embeddings of entity strings (max 30 tokens, as the public code)."""
        import numpy as np
        import torch

        chunks = []
        for begin in range(0, len(words), batch_size):
            encoded = self.align_tokenizer(
                list(words[begin : begin + batch_size]),
                truncation=True,
                padding=True,
                max_length=ALIGNMENT_MAX_LENGTH,
                return_tensors="pt",
            ).to(self.device)
            with torch.no_grad():
                cls = self.align_model(**encoded).last_hidden_state[:, 0, :].float()
            cls = torch.nn.functional.normalize(cls, dim=-1, eps=1e-8)
            chunks.append(cls.cpu().numpy().astype(np.float64))
        if not chunks:
            return np.zeros((0, 0))
        return np.concatenate(chunks, axis=0)


def _token_window(
    offsets: Sequence[tuple[int, int]], span_start: int, span_end: int, budget: int
) -> tuple[int, int] | None:
    """Character range of at most `budget` tokens around [span_start, span_end), or None if
    the span alone needs more tokens."""
    import bisect

    starts = [o[0] for o in offsets]
    ends = [o[1] for o in offsets]
    first = min(bisect.bisect_right(ends, span_start), len(offsets) - 1)
    last = max(first, bisect.bisect_left(starts, span_end) - 1)
    width = last - first + 1
    if width > budget:
        return None
    extra = budget - width
    lo = max(0, first - extra // 2)
    hi = min(len(offsets) - 1, lo + budget - 1)
    lo = max(0, hi - budget + 1)
    # an entity may start or end in whitespace the tokens do not cover
    return min(offsets[lo][0], span_start), max(offsets[hi][1], span_end)


_MODEL_CACHE: dict[tuple[Any, ...], HareModels] = {}
_CACHE_LOCK = threading.Lock()


def load_hare_models(options: Mapping[str, Any] | None = None) -> HareModels:
    """The HARE models for these options, loaded once per process and reused."""
    options = dict(options or {})
    dirs = resolve_model_dirs(options)
    device = str(options.get("device") or "auto")
    key = (tuple(sorted((k, str(v.resolve())) for k, v in dirs.items())), device)
    with _CACHE_LOCK:
        if key not in _MODEL_CACHE:
            _MODEL_CACHE[key] = HareModels(dirs, device)
        return _MODEL_CACHE[key]


# --------------------------------------------------------------------------- scores


def entity_alignment(
    pred_vectors: np.ndarray, ref_vectors: np.ndarray
) -> tuple[float, float, float]:
    """(precision, recall, F1) of entity alignment by best cosine similarity; 0 if a side is empty."""
    import numpy as np

    if pred_vectors.shape[0] == 0 or ref_vectors.shape[0] == 0:
        return 0.0, 0.0, 0.0
    similarity = pred_vectors @ ref_vectors.T
    precision = float(np.mean(similarity.max(axis=1)))
    recall = float(np.mean(similarity.max(axis=0)))
    total = precision + recall
    # cosines can be negative; a non-positive sum means no alignment at all
    f1 = 0.0 if total <= 0 else 2 * precision * recall / total
    return precision, recall, f1


def relation_f1(
    pred: set[tuple[str, str, str]], ref: set[tuple[str, str, str]]
) -> tuple[float, float, float, int]:
    """(precision, recall, F1, matched) by exact (head, tail, label) match, as the public code."""
    matched = len(pred & ref)
    precision = matched / (len(pred) + 1e-9)
    recall = matched / (len(ref) + 1e-9)
    total = precision + recall
    f1 = 0.0 if total == 0 else 2 * precision * recall / total
    return precision, recall, f1, matched


class HAREMetric(Metric):
    name: ClassVar[str] = "hare"
    option_table: ClassVar[tuple[DatasetOption, ...]] = OPTIONS
    description: ClassVar[str] = (
        "HARE: entity (embedding alignment) and relation F1 with the HARE-NER/RE/alignment models"
    )
    tasks: ClassVar[tuple[str, ...]] = (TASK_REPORT,)
    higher_is_better: ClassVar[bool] = True
    headline_scores: ClassVar[tuple[str, ...]] = ("HARE",)
    case_scores: ClassVar[tuple[str, ...]] = ("HARE",)
    citation: ClassVar[str] = (
        "Kim et al. 2025, HARE: an entity and relation centric evaluation framework for "
        "histopathology reports, arXiv:2509.16326"
    )

    def compute(self, predictions: Sequence[Any], references: Sequence[Any], *, ids: Sequence[str] | None = None,
                context: Mapping[str, Any] | None = None) -> MetricResult:
        import numpy as np
        import polars as pl

        options = metric_options(context, type(self))
        pairs = validate_report_pairs(predictions, references, ids, metric=self.name, multi_reference=False)
        batch_size = int(option_number(options, "batch_size", DEFAULT_BATCH_SIZE, self.name, integer=True, minimum=1))
        entity_threshold = float(option_number(options, "entity_threshold", ENTITY_THRESHOLD, self.name))
        relation_threshold = float(option_number(options, "relation_threshold", RELATION_THRESHOLD, self.name))
        max_pairs = int(
            option_number(options, "max_relation_pairs", DEFAULT_MAX_RELATION_PAIRS, self.name, integer=True, minimum=1)
        )
        relation_entities = str(options.get("relation_entities") or "thresholded")  # a choice of the table
        models = load_hare_models(options)

        references_text = [refs[0] for refs in pairs.references]
        # REG has 7,405 reports but 801 distinct texts: analyse each distinct text once
        distinct = list(dict.fromkeys([*pairs.predictions, *references_text]))
        with models.lock:
            found = models.extract_entities(distinct, -math.inf if relation_entities == "all" else entity_threshold,
                                            batch_size)
            # "all": relations see every entity, scoring only those above the threshold;
            # otherwise extraction has already applied the threshold
            entities = ([[e for e in ents if e.score > entity_threshold] for ents in found]
                        if relation_entities == "all" else found)
            relations, out_of_reach = models.extract_relations(distinct, found, relation_threshold, batch_size,
                                                               max_pairs)
            words = list(dict.fromkeys(e.word for ents in entities for e in ents))
            vectors = models.embed(words, batch_size) if words else np.zeros((0, 0))
        analysis = {
            text: ReportAnalysis(entities[k], relations[k], out_of_reach[k]) for k, text in enumerate(distinct)
        }
        row_of = {w: k for k, w in enumerate(words)}

        def vectors_of(found: ReportAnalysis) -> np.ndarray:
            if not found.entities:
                return np.zeros((0, vectors.shape[1] if vectors.size else 0))
            return vectors[[row_of[e.word] for e in found.entities]]

        rows: dict[str, list[Any]] = {
            key: []
            for key in (
                "entity_precision", "entity_recall", "F1-entity", "relation_precision", "relation_recall",
                "F1-relation", "HARE", "HARE-avg", "entities_prediction", "entities_reference",
                "relations_prediction", "relations_reference", "relations_matched", "pairs_out_of_reach",
            )
        }
        for pred_text, ref_text in zip(pairs.predictions, references_text, strict=True):
            pred, ref = analysis[pred_text], analysis[ref_text]
            e_p, e_r, e_f1 = entity_alignment(vectors_of(pred), vectors_of(ref))
            r_p, r_r, r_f1, matched = relation_f1(pred.relations, ref.relations)
            rows["entity_precision"].append(e_p)
            rows["entity_recall"].append(e_r)
            rows["F1-entity"].append(e_f1)
            rows["relation_precision"].append(r_p)
            rows["relation_recall"].append(r_r)
            rows["F1-relation"].append(r_f1)
            rows["HARE"].append(e_f1 + r_f1)
            rows["HARE-avg"].append(0.5 * e_f1 + 0.5 * r_f1)
            rows["entities_prediction"].append([e.word for e in pred.entities])
            rows["entities_reference"].append([e.word for e in ref.entities])
            rows["relations_prediction"].append(sorted(" -> ".join(r) for r in pred.relations))
            rows["relations_reference"].append(sorted(" -> ".join(r) for r in ref.relations))
            rows["relations_matched"].append(matched)
            rows["pairs_out_of_reach"].append(pred.pairs_out_of_reach + ref.pairs_out_of_reach)

        summary = {
            "HARE": float(np.mean(rows["HARE"])),
            "HARE-avg": float(np.mean(rows["HARE-avg"])),
            "HARE-F1-entity": float(np.mean(rows["F1-entity"])),
            "HARE-F1-relation": float(np.mean(rows["F1-relation"])),
        }
        per_case = pl.DataFrame(
            {"id": pairs.ids, **rows},
            schema_overrides={
                "entities_prediction": pl.List(pl.Utf8),
                "entities_reference": pl.List(pl.Utf8),
                "relations_prediction": pl.List(pl.Utf8),
                "relations_reference": pl.List(pl.Utf8),
            },
        )
        return MetricResult(summary=summary, per_case=per_case)


@hookimpl
def register_metrics(register: Any) -> None:
    register(HAREMetric)
