"""Write the API signatures into the API pages themselves, so that they read without `make docs`.

- `docs/api/sdk.md` (the public helper API, `pathkit_sdk`): every name of `pathkit_sdk.__all__`,
  grouped by `SDK_SECTIONS`, with its signature and docstring written into the page.
- Every other `docs/api/*.md` page: the signatures of what its `::: module` directives document
  (the directive's `members` when it names them, else the module's `__all__`, else the public
  names the module defines), in one block at the end of the page. The directives stay: `make docs`
  renders the docstrings from them.

The generated text lies between `BEGIN` and `END`; everything else on a page is written by hand.
tests/sdk/test_sdk_docs.py fails when a page differs from what this script writes.

    python docs/gen_sdk_signatures.py          # rewrite the pages
    python docs/gen_sdk_signatures.py --check  # exit 1 naming the pages that differ
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pprint
import re
import sys
from pathlib import Path
from typing import Any

API = Path(__file__).resolve().parent / "api"
SDK_PAGE = "sdk.md"
BEGIN = "<!-- signatures: written by docs/gen_sdk_signatures.py from the code; change the code, then rerun it -->"
END = "<!-- end of the written signatures -->"

# The groups of docs/api/sdk.md, in page order; together exactly pathkit_sdk.__all__.
SDK_SECTIONS: dict[str, tuple[str, ...]] = {
    "Cohort tables": (
        "read_table", "Table", "TABLE_SUFFIXES", "find_table", "cell", "COLUMN_ALIASES", "find_column",
        "require_columns", "cohort_rows", "CohortRow", "resolve_file", "path_inside", "plain_name", "plausible_mpp",
        "check_duplicates",
        "drop_missing_files", "check_slide_mpps", "group_rows", "CaseRows", "class_order", "check_part_classes",
    ),
    "A cohort's split": (
        "choose_split", "file_split", "column_split", "drawn_split", "part_counts", "splits_folder",
    ),
    "The table dataset base": ("CohortDataset", "COHORT_OPTIONS", "option"),
    "Report JSON files": ("read_report_records", "ReportRecords", "find_json_file", "read_json"),
    "Splits": (
        "SPLIT_PARTS", "split_part", "read_split_file", "write_split_file", "match_split_ids", "check_user_split",
        "check_disjoint", "draw_split", "load_or_draw_split", "DrawnSplit", "patient_disjoint_split",
        "stratified_patient_split", "split_statement", "SplitRecord", "SplitParams", "SplitManifest", "as_records",
        "make_splits", "load_or_create_splits", "load_splits",
    ),
    "Confidence intervals": (
        "bootstrap_ci", "bootstrap_statistic_ci", "bootstrap_statistics_ci", "bootstrap_distribution",
        "resample_indices", "proportion_ci", "PROPORTION_METHODS", "sample_facts", "small_sample_warning",
        "SAMPLE_KEY", "MIN_CASES", "MIN_CASES_PER_CLASS",
    ),
    "Report charts": ("bar_chart", "heatmap"),
    "Checkpoints": ("verify_sha256", "read_state_dict", "load_state_dict_checked", "state_dict_mismatches"),
    "Ground-truth masks": (
        "reference_mask", "read_raster", "RasterMask", "frame_on_slide", "resample", "check_within", "positive_number",
        "class_list", "write_png", "MASK_SUFFIXES", "RASTER_SUFFIXES", "GEOJSON_SUFFIXES",
    ),
    "Synthetic slides": ("write_synthetic_slide", "Blob", "PenStroke", "default_layout"),
    "Tile streaming": ("iter_tile_batches", "tile_loader"),
    "Plugin commands": ("CliOption", "REQUIRED", "typer_command", "parse_plain", "run_plain"),
}

WIDTH = 100  # longer signatures are written one parameter a line
# Sections whose module's docstring opens them on the page (the conventions the helpers share).
SECTION_MODULES = {"Cohort tables": "pathkit_sdk.cohort", "Splits": "pathkit_sdk.splits",
                   "Report JSON files": "pathkit_sdk.reports",
                   "Report charts": "pathkit_sdk.charts",
                   "Checkpoints": "pathkit_sdk.checkpoints", "Ground-truth masks": "pathkit_sdk.masks",
                   "Synthetic slides": "pathkit_sdk.synthetic", "Tile streaming": "pathkit_sdk.tiles",
                   "Plugin commands": "pathkit_sdk.commands"}
_PLAIN = (int, float, complex, str, bytes, bool, type(None))


class _Text:
    """Text that `inspect` prints as it is (annotations kept as written, defaults by name)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _value_text(value: Any, namespace: dict[str, Any]) -> str:
    """A default value as code: a module constant by its name, a function or class by its name,
    else its repr, sets sorted (an object whose repr holds a memory address by its type)."""
    if not isinstance(value, _PLAIN):
        for name, obj in namespace.items():
            if obj is value and not name.startswith("_"):
                return name
    if inspect.isfunction(value) or inspect.isclass(value):
        return value.__qualname__
    text = pprint.pformat(value, width=10**6, sort_dicts=False)  # sets in a stable order, unlike repr
    return f"{type(value).__name__}(...)" if " at 0x" in text else text


def _annotation_text(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def signature_text(obj: Any, name: str | None = None) -> str:
    """`name(params) -> return`, annotations as written in the source, one parameter a line when
    it is long; "" when there is none."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    namespace = vars(sys.modules[obj.__module__]) if getattr(obj, "__module__", None) in sys.modules else {}
    params = []
    for param in sig.parameters.values():
        changes: dict[str, Any] = {}
        if param.annotation is not inspect.Parameter.empty:
            changes["annotation"] = _Text(_annotation_text(param.annotation))
        if param.default is not inspect.Parameter.empty:
            changes["default"] = _Text(_value_text(param.default, namespace))
        params.append(param.replace(**changes))
    returns = sig.return_annotation
    returns = inspect.Signature.empty if returns is inspect.Signature.empty else _Text(_annotation_text(returns))
    text = f"{name or obj.__name__}{sig.replace(parameters=params, return_annotation=returns)}"
    if len(text) <= WIDTH:
        return text
    pieces = [str(p) for p in params]
    # the markers of positional-only and keyword-only parameters, as inspect writes them
    shown, kinds = [], [p.kind for p in params]
    for i, (piece, kind) in enumerate(zip(pieces, kinds, strict=True)):
        if kind is inspect.Parameter.KEYWORD_ONLY and (i == 0 or kinds[i - 1] is not kind) \
                and inspect.Parameter.VAR_POSITIONAL not in kinds:
            shown.append("*")
        shown.append(piece)
        if kind is inspect.Parameter.POSITIONAL_ONLY and (i + 1 == len(kinds) or kinds[i + 1] is not kind):
            shown.append("/")
    tail = "" if returns is inspect.Signature.empty else f" -> {returns!r}"
    return f"{name or obj.__name__}(\n" + "".join(f"    {s},\n" for s in shown) + f"){tail}"


def _constant_text(name: str, value: Any, annotation: str | None = None) -> str:
    head = f"{name}: {annotation}" if annotation else name
    text = pprint.pformat(value, width=100, sort_dicts=False)
    text = re.sub(r" at 0x[0-9a-f]+", "", text)
    text = re.sub(r"<class '(?:[\w]+\.)*(\w+)'>", r"\1", text)
    return f"{head} = {text}"


def _public_methods(cls: type) -> list[tuple[str, Any]]:
    """The class's own public methods and properties, in source order."""
    out = []
    for name, member in vars(cls).items():
        if name.startswith("_") and name != "__init__":
            continue
        if name == "__init__" and dataclasses.is_dataclass(cls):
            continue
        if isinstance(member, staticmethod | classmethod):
            out.append((name, member.__func__))
        elif inspect.isfunction(member) or isinstance(member, property):
            out.append((name, member))
    return out


def class_stub(cls: type) -> str:
    """`class Name(Bases):` with its own annotated attributes (and defaults) and method signatures."""
    bases = ", ".join(b.__name__ for b in cls.__bases__ if b is not object)
    lines = [f"class {cls.__name__}({bases}):" if bases else f"class {cls.__name__}:"]
    namespace = vars(sys.modules[cls.__module__])
    for attr, annotation in vars(cls).get("__annotations__", {}).items():
        if attr.startswith("_"):
            continue
        text = f"    {attr}: {_annotation_text(annotation)}"
        value = vars(cls).get(attr, dataclasses.MISSING)
        field = getattr(cls, "__dataclass_fields__", {}).get(attr)
        if value is not dataclasses.MISSING and not isinstance(value, property):
            text += f" = {_value_text(value, namespace)}"
        elif field is not None and field.default_factory is not dataclasses.MISSING:
            text += f" = field(default_factory={_value_text(field.default_factory, namespace)})"
        lines.append(text)
    for name, member in _public_methods(cls):
        if isinstance(member, property):
            getter = member.fget
            returns = inspect.signature(getter).return_annotation if getter else inspect.Signature.empty
            kind = "" if returns is inspect.Signature.empty else f": {_annotation_text(returns)}"
            lines.append(f"    {name}{kind}  # property")
        else:
            decorator = "@classmethod " if isinstance(vars(cls)[name], classmethod) else (
                "@staticmethod " if isinstance(vars(cls)[name], staticmethod) else "")
            signature = signature_text(member, name).replace("\n", "\n    ")
            lines.append(f"    {decorator}def {signature}")
    if len(lines) == 1:
        lines.append("    ...")
    return "\n".join(lines)


def stub(name: str, obj: Any, module: Any = None) -> str:
    """One name as code: a class stub, a `def` line, or a constant with its value."""
    if inspect.isclass(obj):
        return class_stub(obj)
    if inspect.ismodule(obj):
        alias = "" if obj.__name__.rsplit(".", 1)[-1] == name else f" as {name}"
        return f"import {obj.__name__}{alias}"
    if callable(obj) and (inspect.isfunction(obj) or inspect.isbuiltin(obj) or hasattr(obj, "__wrapped__")):
        return f"def {signature_text(obj, name)}"
    annotation = None
    if module is not None:
        annotation = getattr(module, "__annotations__", {}).get(name)
    return _constant_text(name, obj, _annotation_text(annotation) if annotation else None)


# --------------------------------------------------------------------------- directive pages


def directives(page: str) -> list[tuple[str, list[str] | None]]:
    """The `::: module` directives of a page with their `members` option, in page order."""
    out: list[tuple[str, list[str] | None]] = []
    for line in page.splitlines():
        found = re.match(r":::\s+([\w.]+)\s*$", line)
        if found:
            out.append((found.group(1), None))
            continue
        members = re.match(r"\s+members:\s*\[(.*)\]\s*$", line)
        if members and out:
            out[-1] = (out[-1][0], [m.strip() for m in members.group(1).split(",") if m.strip()])
    return out


def defined_names(module: Any) -> list[str]:
    """The public names a module defines at top level (functions, classes, assignments), in source order."""
    tree = ast.parse(inspect.getsource(module))
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in dict.fromkeys(names) if not n.startswith("_") and hasattr(module, n)]


def module_names(module: Any, members: list[str] | None) -> list[str]:
    """What a directive documents: its `members`, else `__all__`, else the module's public names
    (in source order where the module defines them)."""
    if members is not None:
        return members
    defined = defined_names(module)
    exported = getattr(module, "__all__", None)
    if exported is None:
        return defined
    return [n for n in defined if n in exported] + [n for n in exported if n not in defined]


def directive_signatures(page: str) -> str:
    """The written-signatures block of a page documented by `::: module` directives."""
    parts = ["## Signatures", "",
             "What the sections above document, as it is declared in the code (annotations as written):"]
    for module_name, members in directives(page):
        module = importlib.import_module(module_name)
        body = "\n\n".join(stub(n, getattr(module, n), module) for n in module_names(module, members))
        parts += ["", f"`{module_name}`", "", "```python", body, "```"]
    return "\n".join(parts)


# --------------------------------------------------------------------------- the SDK page


def _docstring(obj: Any) -> str:
    doc = inspect.getdoc(obj) if (inspect.isclass(obj) or callable(obj)) else None
    return doc or ""


def _dataclass_table(values: Any) -> str | None:
    """A tuple of one dataclass's instances (COHORT_OPTIONS) as a Markdown table."""
    items = list(values) if isinstance(values, tuple | list) else []
    if not items or not all(dataclasses.is_dataclass(v) and type(v) is type(items[0]) for v in items):
        return None
    fields = [f.name for f in dataclasses.fields(items[0])]
    rows = ["| " + " | ".join(fields) + " |", "|" + "---|" * len(fields)]
    for item in items:
        cells = [repr(getattr(item, f)) if f == "default" else str(getattr(item, f)) for f in fields]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


def sdk_entry(name: str, obj: Any) -> str:
    """One helper of the SDK page: heading, where it comes from, signature, docstring."""
    origin = getattr(obj, "__module__", None) if (inspect.isclass(obj) or callable(obj)) else None
    origin = origin or _constant_origin(name)
    lines = [f"### `{name}`", "", f"From `{origin}`.", ""]
    table = _dataclass_table(obj)
    if table is not None:
        lines += [f"`{name}`, one row per item:", "", table, ""]
        return "\n".join(lines)
    module = sys.modules.get(origin)
    lines += ["```python", stub(name, obj, module), "```", ""]
    doc = _docstring(obj)
    if doc:
        lines += [doc, ""]
    if inspect.isclass(obj):
        for method, member in _public_methods(obj):
            text = inspect.getdoc(member) if not isinstance(member, property) else inspect.getdoc(member)
            if text and method != "__init__":
                lines += [f"`{name}.{method}`: {text}", ""]
    return "\n".join(lines)


def _constant_origin(name: str) -> str:
    """The module that defines constant `name` of pathkit_sdk (its import statement says)."""
    import pathkit_sdk

    tree = ast.parse(inspect.getsource(pathkit_sdk))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            return str(node.module)
    return "pathkit_sdk"


def sdk_signatures() -> str:
    import pathkit_sdk

    parts = []
    for section, names in SDK_SECTIONS.items():
        parts += [f"## {section}", ""]
        if section in SECTION_MODULES:
            module = importlib.import_module(SECTION_MODULES[section])
            parts += [f"`{module.__name__}`: {inspect.getdoc(module)}", ""]
        parts += [sdk_entry(n, getattr(pathkit_sdk, n)) for n in names]
    return "\n".join(parts).rstrip("\n")


# --------------------------------------------------------------------------- pages


def written(page_path: Path) -> str:
    """The page as this script writes it: the hand-written text and the generated block."""
    text = page_path.read_text(encoding="utf-8")
    head = text.split(BEGIN, 1)[0].rstrip("\n")
    block = sdk_signatures() if page_path.name == SDK_PAGE else directive_signatures(head)
    return f"{head}\n\n{BEGIN}\n\n{block}\n\n{END}\n"


def pages() -> list[Path]:
    """The API pages that document code: the sdk page and those with a `::: module` directive (not,
    e.g., stability.md, which lists the public surface in prose)."""
    return sorted(p for p in API.glob("*.md") if p.name == SDK_PAGE or directives(p.read_text(encoding="utf-8")))


def main(argv: list[str]) -> int:
    check = "--check" in argv
    differ = []
    for path in pages():
        new = written(path)
        if new != path.read_text(encoding="utf-8"):
            differ.append(path)
            if not check:
                path.write_text(new, encoding="utf-8")
    if check and differ:
        print("signatures differ from the code in: " + ", ".join(str(p) for p in differ)
              + "; run python docs/gen_sdk_signatures.py")
        return 1
    for path in differ:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(API.parent.parent))
    raise SystemExit(main(sys.argv[1:]))
