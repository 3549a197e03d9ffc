"""Field equivalence rules and the four CRQS components (CFC, KIR, HR, CDS) of one report pair."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pathkit_metrics._crqs.clinical_schema import ClinicalSchema
from pathkit_metrics._crqs.extract import FINDING_SEPARATOR
from pathkit_metrics._crqs.lazy_pattern import lazy
from pathkit_metrics._crqs.normalise import ORDINAL_SCALES, split_grade_system

# Weights of the formula the paper's numbers use (PathBench config; docs/metrics.md, "CRQS"):
# CRQS_raw = 0.3*CFC + 0.4*KIR - 0.2*HR - 0.4*CDS, CRQS = CRQS_raw / 0.7.
W_CFC, W_KIR, W_HR, W_CDS = 0.3, 0.4, 0.2, 0.4
CRQS_MAX_RAW = W_CFC + W_KIR  # 0.7, reached with CFC = KIR = 1 and HR = CDS = 0

RULE_EXACT = "exact"  # categorical values: equal after normalisation
RULE_TEXT = "text"  # diagnosis-like phrases: equal, or (non-strict) one's words contain the other's
RULE_ORDINAL = "ordinal"  # graded scales: equal rank (within a rank tolerance, non-strict numeric only)
RULE_NUMERIC = "numeric"  # measured numbers: within a tolerance, same unit
RULE_GLEASON = "gleason"  # Gleason score: same sum and, where both give them, same patterns
RULE_FINDINGS = "findings"  # a set of findings, order-free: F1 of the findings two reports share

FIELD_RULES: dict[str, str] = {
    "organ_site": RULE_TEXT,
    "specimen_type": RULE_TEXT,
    "diagnosis": RULE_FINDINGS,
    "histologic_type": RULE_TEXT,
    "in_situ_component": RULE_TEXT,
    "gleason_score": RULE_GLEASON,
    "tumor_volume": RULE_NUMERIC,
    "tumor_extent": RULE_NUMERIC,
    "tumor_size": RULE_NUMERIC,
    "specimen_parts": RULE_FINDINGS,
    **{name: RULE_ORDINAL for name in ORDINAL_SCALES},
}

# Tolerances when the schema names a numeric field without giving one: percentages within
# 10 points (PathBench REG), sizes within 15 % of the reference (PathBench TCGA).
DEFAULT_ABSOLUTE_TOLERANCE = {"%": 10.0}
DEFAULT_RELATIVE_TOLERANCE = {"cm": 0.15}

_QUANTITY_RE = lazy(r"^(\d+(?:\.\d+)?)\s*(%|cm)?$")
_GLEASON_RE = lazy(r"^(?:([1-5])\+([1-5])=)?(\d{1,2})$")


def field_rule(field: str) -> str:
    return FIELD_RULES.get(field, RULE_EXACT)


def _text_equivalent(reference: str, prediction: str, strict: bool) -> bool:
    if reference == prediction:
        return True
    if strict:
        return False
    ref_words, pred_words = set(reference.split()), set(prediction.split())
    return bool(ref_words and pred_words) and (ref_words <= pred_words or pred_words <= ref_words)


def _ordinal_equivalent(field: str, reference: str, prediction: str, tolerance: float) -> bool:
    if reference == prediction:
        return True
    if field == "tumor_grade":  # two named grading systems never match (normalise.GRADE_SYSTEMS)
        (ref_system, reference), (pred_system, prediction) = split_grade_system(reference), split_grade_system(
            prediction)
        if ref_system and pred_system and ref_system != pred_system:
            return False
    for scale in ORDINAL_SCALES.get(field, ()):
        if reference in scale and prediction in scale:
            return abs(scale[reference] - scale[prediction]) <= tolerance
    return False


def _numeric_equivalent(reference: str, prediction: str, tolerance: float | None, strict: bool) -> bool:
    if reference == prediction:
        return True
    ref, pred = _QUANTITY_RE.match(reference), _QUANTITY_RE.match(prediction)
    if ref is None or pred is None or ref.group(2) != pred.group(2):
        return False
    ref_value, pred_value = float(ref.group(1)), float(pred.group(1))
    if strict:
        return ref_value == pred_value
    unit = ref.group(2) or ""
    if tolerance is not None:
        return abs(ref_value - pred_value) <= tolerance + 1e-9
    if unit in DEFAULT_ABSOLUTE_TOLERANCE:
        return abs(ref_value - pred_value) <= DEFAULT_ABSOLUTE_TOLERANCE[unit] + 1e-9
    if unit in DEFAULT_RELATIVE_TOLERANCE:
        if ref_value == 0:
            return pred_value == 0
        return abs(ref_value - pred_value) / ref_value <= DEFAULT_RELATIVE_TOLERANCE[unit] + 1e-9
    return ref_value == pred_value


def _gleason_equivalent(reference: str, prediction: str, strict: bool) -> bool:
    if reference == prediction:
        return True
    if strict:
        return False
    ref, pred = _GLEASON_RE.match(reference), _GLEASON_RE.match(prediction)
    if ref is None or pred is None or ref.group(3) != pred.group(3):
        return False
    if ref.group(1) and pred.group(1):
        return (ref.group(1), ref.group(2)) == (pred.group(1), pred.group(2))
    return True


def findings_agreement(reference: str, prediction: str, strict: bool) -> float:
    """F1 of two finding sets (`FINDING_SEPARATOR`-joined): 2 x shared / (reference + predicted)
    findings, each prediction finding paired with at most one reference finding it is
    equivalent to (equal; for a non-strict field, word containment as the text rule)."""
    ref = reference.split(FINDING_SEPARATOR)
    pred = prediction.split(FINDING_SEPARATOR)
    unpaired = list(pred)
    shared = 0
    for finding in ref:
        match = next((p for p in unpaired if _text_equivalent(finding, p, strict)), None)
        if match is not None:
            unpaired.remove(match)
            shared += 1
    return 2.0 * shared / (len(ref) + len(pred))


def values_agreement(field: str, reference: str, prediction: str, schema: ClinicalSchema) -> float:
    """How far one field's values agree, in [0, 1]: 1 equivalent, 0 discordant; fractions only
    for a set of findings (`findings_agreement`)."""
    if field_rule(field) == RULE_FINDINGS:
        return findings_agreement(reference, prediction, schema.is_strict(field))
    return 1.0 if values_equivalent(field, reference, prediction, schema) else 0.0


def values_equivalent(field: str, reference: str, prediction: str, schema: ClinicalSchema) -> bool:
    """Clinical equivalence of one field's values under the schema's strict/numeric lists."""
    strict = schema.is_strict(field)
    rule = field_rule(field)
    if rule == RULE_FINDINGS:
        return findings_agreement(reference, prediction, strict) == 1.0
    if rule == RULE_TEXT:
        return _text_equivalent(reference, prediction, strict)
    if rule == RULE_GLEASON:
        return _gleason_equivalent(reference, prediction, strict)
    if rule == RULE_ORDINAL:
        tolerance = 0.0
        if schema.is_numeric(field) and not strict:
            tolerance = schema.numeric_tolerance.get(field, 0.0)
        return _ordinal_equivalent(field, reference, prediction, tolerance)
    if rule == RULE_NUMERIC:
        return _numeric_equivalent(reference, prediction, schema.numeric_tolerance.get(field), strict)
    return reference == prediction


@dataclass(frozen=True)
class CaseComparison:
    """One report pair: the field lists behind each CRQS component and the scores.

    `matched`: in both, equivalent; `discordant`: in both, not (fully) equivalent; `missed`: in
    the reference only; `hallucinated`: in the prediction only. A field of findings can agree in
    part (`partial`: field -> agreement in (0, 1)); it counts that fraction as matched and the
    rest as discordant, so CFC, KIR and CDS are sums of agreements (for every other field 0 or
    1, the paper's counts). CFC and CRQS are None when the reference has no field (nothing to
    recover); KIR is None when it has no key field, and CRQS then uses CFC in KIR's place (see
    docs/metrics.md).
    """

    matched: tuple[str, ...]
    missed: tuple[str, ...]
    hallucinated: tuple[str, ...]
    discordant: tuple[str, ...]
    n_reference: int
    n_prediction: int
    n_reference_key: int
    cfc: float | None
    kir: float | None
    hr: float
    cds: float
    crqs_raw: float | None
    crqs: float | None
    crqs_eq6_raw: float | None
    crqs_eq6: float | None
    partial: Mapping[str, float] = field(default_factory=dict)


def compare_fields(
    reference: Mapping[str, str], prediction: Mapping[str, str], schema: ClinicalSchema
) -> CaseComparison:
    matched: list[str] = []
    missed: list[str] = []
    hallucinated: list[str] = []
    discordant: list[str] = []
    partial: dict[str, float] = {}
    agreed = agreed_key = disagreed = 0.0
    key_total = 0.0
    # weighted counts (`ClinicalSchema.field_weights`; every weight 1 gives the paper's counts)
    w_reference = w_prediction = w_common = w_hallucinated = 0.0
    for name in schema.fields:
        ref_value = reference.get(name)
        pred_value = prediction.get(name)
        weight = schema.weight(name)
        if ref_value is not None:
            w_reference += weight
        if pred_value is not None:
            w_prediction += weight
        if ref_value is not None and pred_value is not None:
            w_common += weight
            agreement = values_agreement(name, ref_value, pred_value, schema)
            agreed += weight * agreement
            disagreed += weight * (1.0 - agreement)
            if schema.is_key(name):
                agreed_key += weight * agreement
            if agreement == 1.0:
                matched.append(name)
            else:
                discordant.append(name)
                if agreement > 0.0:
                    partial[name] = agreement
        elif ref_value is not None:
            missed.append(name)
        elif pred_value is not None:
            hallucinated.append(name)
            w_hallucinated += weight
        if ref_value is not None and schema.is_key(name):
            key_total += weight
    n_reference = len(matched) + len(discordant) + len(missed)
    n_prediction = len(matched) + len(discordant) + len(hallucinated)
    hr = w_hallucinated / w_prediction if w_prediction else 0.0
    cds = disagreed / w_common if w_common else 0.0
    cfc = agreed / w_reference if w_reference else None
    kir = agreed_key / key_total if key_total else None
    if cfc is None:
        raw = norm = eq6_raw = eq6 = None
    else:
        kir_used = kir if kir is not None else cfc
        raw = W_CFC * cfc + W_KIR * kir_used - W_HR * hr - W_CDS * cds
        norm = raw / CRQS_MAX_RAW
        eq6_raw = W_CFC * cfc + W_KIR * kir_used + W_HR * (1.0 - hr) + W_CDS * (1.0 - cds)
        eq6 = eq6_raw / CRQS_MAX_RAW
    return CaseComparison(matched=tuple(matched), missed=tuple(missed), hallucinated=tuple(hallucinated),
                          discordant=tuple(discordant), n_reference=n_reference, n_prediction=n_prediction,
                          n_reference_key=sum(1 for name in schema.key_fields if name in reference),
                          cfc=cfc, kir=kir, hr=hr, cds=cds, crqs_raw=raw, crqs=norm, crqs_eq6_raw=eq6_raw,
                          crqs_eq6=eq6, partial=partial)


__all__ = [
    "CaseComparison",
    "compare_fields",
    "values_equivalent",
    "values_agreement",
    "findings_agreement",
    "field_rule",
    "FIELD_RULES",
    "CRQS_MAX_RAW",
]
