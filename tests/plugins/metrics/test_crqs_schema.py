"""CRQS clinical schemas: the paper's field counts, validation of the core dataclass, schema selection."""

from __future__ import annotations

import pytest
from pathkit_metrics._crqs.clinical_schema import ClinicalSchema
from pathkit_metrics._crqs.extract import EXTRACTED_FIELDS
from pathkit_metrics._crqs.schemas import GENERIC, HISTAI, REG, TCGA, TCGA_PAPER, resolve_schema, schema_by_name

from pathkit_core.contracts import Dataset, PathkitError


@pytest.mark.parametrize(
    ("schema", "n_fields", "n_key"),
    [(REG, 18, 5), (HISTAI, 38, 10), (TCGA_PAPER, 33, 9)],
)
def test_schema_sizes_match_paper_tables(schema, n_fields, n_key):
    # PathReportEval appendix A.7: REG 18 fields / 5 key (Tables 7-8), HistAI 38 / 10 (9-10), TCGA 33 / 9 (11-12)
    assert len(schema.fields) == n_fields
    assert len(schema.key_fields) == n_key


def test_tcga_schema_is_table_11_plus_the_report_fields_with_severity_weights():
    # pathkit's TCGA schema keeps every field of Tables 11-12 and adds what TCGA reports state
    assert TCGA.fields[:33] == TCGA_PAPER.fields and TCGA.key_fields[:9] == TCGA_PAPER.key_fields
    added = set(TCGA.fields) - set(TCGA_PAPER.fields)
    assert added == {"nuclear_grade", "gleason_score", "invasion_depth", "pathologic_t", "pathologic_n",
                     "pathologic_m", "stage_group", "lymph_node_ratios", "extranodal_extension", "laterality",
                     "specimen_parts", "statements_elsewhere"}
    for name in ("histologic_type", "tumor_grade", "pathologic_t", "margin_status", "lymph_node_involvement",
                 "specimen_parts"):
        assert TCGA.weight(name) == 3.0
    assert TCGA.weight("lymphovascular_invasion") == 2.0 and TCGA.weight("necrosis") == 1.0
    # what the report states outside its diagnosis counts as one descriptive field, never a key one
    assert TCGA.weight("statements_elsewhere") == 1.0 and "statements_elsewhere" not in TCGA.key_fields
    assert REG.weight("diagnosis") == 1.0 and not REG.field_weights  # the paper's counts elsewhere
    assert schema_by_name("tcga-paper") is TCGA_PAPER and schema_by_name("tcga") is TCGA
    assert ClinicalSchema.from_dict(TCGA.to_dict()) == TCGA


def test_clinical_schema_rejects_bad_weights():
    with pytest.raises(PathkitError, match="field_weights for unknown field 'grade'"):
        ClinicalSchema("x", fields=("diagnosis",), key_fields=(), field_weights={"grade": 2})
    with pytest.raises(PathkitError, match=r"field_weights\['diagnosis'\] must be a number > 0"):
        ClinicalSchema("x", fields=("diagnosis",), key_fields=(), field_weights={"diagnosis": 0})


def test_reg_key_fields_are_table_8():
    assert REG.key_fields == ("diagnosis", "histologic_type", "tumor_grade", "gleason_score", "invasion_depth")
    assert REG.numeric_fields == ("tumor_volume",)
    assert REG.numeric_tolerance == {"tumor_volume": 10.0}


def test_every_schema_field_is_one_the_extractor_fills():
    for schema in (REG, HISTAI, TCGA, TCGA_PAPER, GENERIC):
        missing = [f for f in schema.fields if f not in EXTRACTED_FIELDS]
        assert not missing, (schema.name, missing)


def test_clinical_schema_rejects_bad_definitions():
    with pytest.raises(PathkitError, match="key_fields grade not among its fields"):
        ClinicalSchema("x", fields=("diagnosis",), key_fields=("grade",))
    with pytest.raises(PathkitError, match="repeats diagnosis"):
        ClinicalSchema("x", fields=("diagnosis", "diagnosis"), key_fields=())
    with pytest.raises(PathkitError, match="no fields"):
        ClinicalSchema("x", fields=(), key_fields=())
    with pytest.raises(PathkitError, match="not a string"):
        ClinicalSchema("x", fields="diagnosis", key_fields=())
    with pytest.raises(PathkitError, match=r"numeric_tolerance\['size'\] must be a number >= 0"):
        ClinicalSchema("x", fields=("size",), key_fields=(), numeric_fields=("size",), numeric_tolerance={"size": -1})
    with pytest.raises(PathkitError, match="unknown field"):
        ClinicalSchema("x", fields=("size",), key_fields=(), numeric_tolerance={"volume": 1})
    with pytest.raises(PathkitError, match="name must be"):
        ClinicalSchema("", fields=("a",), key_fields=())


def test_clinical_schema_round_trips_and_hashes():
    again = ClinicalSchema.from_dict(REG.to_dict())
    assert again == REG
    assert hash(again) == hash(REG)
    with pytest.raises(PathkitError, match="missing key_fields"):
        ClinicalSchema.from_dict({"name": "x", "fields": ["a"]})
    with pytest.raises(PathkitError, match="unknown entries colour"):
        ClinicalSchema.from_dict({"name": "x", "fields": ["a"], "key_fields": [], "colour": 1})
    subset = REG.restricted_to(["diagnosis", "tumor_volume"])
    assert subset.fields == ("diagnosis", "tumor_volume") and subset.key_fields == ("diagnosis",)


class _DatasetWithSchema(Dataset):
    name = "my-dataset"
    clinical_schema = ClinicalSchema("mine", fields=("diagnosis", "necrosis"), key_fields=("diagnosis",))


def test_schema_selection_order():
    own = _DatasetWithSchema.clinical_schema
    # a dataset plugin's own schema wins over the dataset name
    assert resolve_schema({"clinical_schema": own, "dataset": "reg2025"}) is own
    assert resolve_schema({"options": {"clinical_schema": "tcga"}}) is TCGA
    assert resolve_schema({"dataset": _DatasetWithSchema()}) is own
    assert resolve_schema({"dataset": "reg2025"}) is REG
    assert resolve_schema({"dataset": "REG"}) is REG
    assert resolve_schema({"dataset": "tcga"}) is TCGA
    assert resolve_schema({"dataset": "histai"}) is HISTAI
    assert resolve_schema({"dataset": "somebody-elses-dataset"}) is GENERIC
    assert resolve_schema(None) is GENERIC
    assert resolve_schema({"clinical_schema": own.to_dict()}) == own


def test_schema_selection_errors():
    with pytest.raises(PathkitError, match="no built-in clinical schema for 'nope'"):
        schema_by_name("nope")
    with pytest.raises(PathkitError, match="expected a ClinicalSchema"):
        resolve_schema({"clinical_schema": 3})
