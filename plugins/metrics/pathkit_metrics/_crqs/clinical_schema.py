"""The clinical schema a dataset declares for CRQS: which report fields count, which are key, how they compare."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pathkit_core.contracts import PathkitError

SCHEMA_FORMAT = "pathkit-clinical-schema"


def _as_names(value: Any, what: str, schema: str) -> tuple[str, ...]:
    if isinstance(value, str):
        raise PathkitError(f"clinical schema {schema!r}: {what} must be a list of field names, not a string")
    try:
        names = tuple(value)
    except TypeError:
        raise PathkitError(f"clinical schema {schema!r}: {what} must be a list of field names") from None
    bad = [n for n in names if not isinstance(n, str) or not n.strip()]
    if bad:
        raise PathkitError(f"clinical schema {schema!r}: {what} holds non-name entries {bad!r}")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise PathkitError(f"clinical schema {schema!r}: {what} repeats {', '.join(dupes)}")
    return names


@dataclass(frozen=True)
class ClinicalSchema:
    """Fields a report is reduced to for CRQS (PathReportEval, appendix A.7 and Tables 7-12).

    - `fields`: every clinical field compared (order = the schema's hierarchy);
    - `key_fields`: the clinically critical subset behind KIR;
    - `strict_fields`: compared by exact equality of the normalised value only (no partial
      phrase match, no numeric tolerance);
    - `numeric_fields`: compared by number, within `numeric_tolerance[field]` (absolute, in
      the field's unit; a field missing from the mapping uses the metric's default for it);
    - `field_weights`: how much a field counts in CFC, KIR, HR and CDS (default 1 for every
      field, the paper's counts); a field missing from the mapping weighs 1;
    - `source`: where the lists come from (paper table, public code, or "dataset plugin").
    """

    name: str
    fields: tuple[str, ...]
    key_fields: tuple[str, ...]
    strict_fields: tuple[str, ...] = ()
    numeric_fields: tuple[str, ...] = ()
    numeric_tolerance: Mapping[str, float] = field(default_factory=dict)
    source: str = ""
    field_weights: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise PathkitError("clinical schema: name must be a non-empty string")
        for attr in ("fields", "key_fields", "strict_fields", "numeric_fields"):
            object.__setattr__(self, attr, _as_names(getattr(self, attr), attr, self.name))
        if not self.fields:
            raise PathkitError(f"clinical schema {self.name!r}: no fields")
        known = set(self.fields)
        for attr in ("key_fields", "strict_fields", "numeric_fields"):
            unknown = [n for n in getattr(self, attr) if n not in known]
            if unknown:
                raise PathkitError(
                    f"clinical schema {self.name!r}: {attr} {', '.join(unknown)} not among its fields"
                )
        tolerance = dict(self.numeric_tolerance or {})
        for name, value in tolerance.items():
            if name not in known:
                raise PathkitError(f"clinical schema {self.name!r}: numeric_tolerance for unknown field {name!r}")
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise PathkitError(
                    f"clinical schema {self.name!r}: numeric_tolerance[{name!r}] must be a number >= 0, "
                    f"got {value!r}"
                )
        object.__setattr__(self, "numeric_tolerance", {k: float(v) for k, v in tolerance.items()})
        weights = dict(self.field_weights or {})
        for name, value in weights.items():
            if name not in known:
                raise PathkitError(f"clinical schema {self.name!r}: field_weights for unknown field {name!r}")
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise PathkitError(
                    f"clinical schema {self.name!r}: field_weights[{name!r}] must be a number > 0, got {value!r}"
                )
        object.__setattr__(self, "field_weights", {k: float(v) for k, v in weights.items()})

    def __hash__(self) -> int:
        return hash((self.name, self.fields, self.key_fields, self.strict_fields, self.numeric_fields,
                     tuple(sorted(self.numeric_tolerance.items())), self.source,
                     tuple(sorted(self.field_weights.items()))))

    def weight(self, field_name: str) -> float:
        return self.field_weights.get(field_name, 1.0)

    def is_key(self, field_name: str) -> bool:
        return field_name in self.key_fields

    def is_strict(self, field_name: str) -> bool:
        return field_name in self.strict_fields

    def is_numeric(self, field_name: str) -> bool:
        return field_name in self.numeric_fields

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": SCHEMA_FORMAT,
            "name": self.name,
            "fields": list(self.fields),
            "key_fields": list(self.key_fields),
            "strict_fields": list(self.strict_fields),
            "numeric_fields": list(self.numeric_fields),
            "numeric_tolerance": dict(self.numeric_tolerance),
            "field_weights": dict(self.field_weights),
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClinicalSchema:
        if not isinstance(data, Mapping):
            raise PathkitError(f"clinical schema must be a mapping, got {type(data).__name__}")
        allowed = {"format", "name", "fields", "key_fields", "strict_fields", "numeric_fields",
                   "numeric_tolerance", "source", "field_weights"}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise PathkitError(f"clinical schema: unknown entries {', '.join(unknown)}")
        missing = [k for k in ("name", "fields", "key_fields") if k not in data]
        if missing:
            raise PathkitError(f"clinical schema: missing {', '.join(missing)}")
        return cls(
            name=data["name"],
            fields=tuple(data["fields"]),
            key_fields=tuple(data["key_fields"]),
            strict_fields=tuple(data.get("strict_fields", ())),
            numeric_fields=tuple(data.get("numeric_fields", ())),
            numeric_tolerance=dict(data.get("numeric_tolerance", {}) or {}),
            source=str(data.get("source", "")),
            field_weights=dict(data.get("field_weights", {}) or {}),
        )

    def restricted_to(self, names: Iterable[str]) -> ClinicalSchema:
        """The same schema over a subset of its fields (for ablations)."""
        keep = [f for f in self.fields if f in set(names)]
        return ClinicalSchema(
            name=f"{self.name}[subset]",
            fields=tuple(keep),
            key_fields=tuple(f for f in self.key_fields if f in keep),
            strict_fields=tuple(f for f in self.strict_fields if f in keep),
            numeric_fields=tuple(f for f in self.numeric_fields if f in keep),
            numeric_tolerance={k: v for k, v in self.numeric_tolerance.items() if k in keep},
            source=self.source,
            field_weights={k: v for k, v in self.field_weights.items() if k in keep},
        )


__all__ = ["ClinicalSchema", "SCHEMA_FORMAT"]
