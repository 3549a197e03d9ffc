"""Prompt ensembles of the `zero-shot` task (docs/zero-shot.md, "Prompts").

A class is described by one or more class names (synonyms) and a list of templates holding the
placeholder `CLASSNAME`; its prompts are every template filled with every name. The default
templates are the 22 of the CONCH repository's prompt files (`prompts/*_prompts_all_per_class.json`,
mahmoodlab/CONCH). A prompt file is JSON in the same layout, with or without CONCH's outer `"0"` key:

    {"classnames": {"<dataset class>": ["name", "synonym", ...], ...}, "templates": ["an H&E image of CLASSNAME.", ...]}

`templates` is optional (the defaults are used). Without a prompt file each class is named by the
dataset's own class name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError

PLACEHOLDER = "CLASSNAME"
CONCH_TEMPLATES: tuple[str, ...] = (
    "CLASSNAME.", "a photomicrograph showing CLASSNAME.", "a photomicrograph of CLASSNAME.",
    "an image of CLASSNAME.", "an image showing CLASSNAME.", "an example of CLASSNAME.", "CLASSNAME is shown.",
    "this is CLASSNAME.", "there is CLASSNAME.", "a histopathological image showing CLASSNAME.",
    "a histopathological image of CLASSNAME.", "a histopathological photograph of CLASSNAME.",
    "a histopathological photograph showing CLASSNAME.", "shows CLASSNAME.", "presence of CLASSNAME.",
    "CLASSNAME is present.", "an H&E stained image of CLASSNAME.", "an H&E stained image showing CLASSNAME.",
    "an H&E image showing CLASSNAME.", "an H&E image of CLASSNAME.", "CLASSNAME, H&E stain.", "CLASSNAME, H&E.",
)


def _strings(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise PathkitError(f"{where} must be a non-empty list of non-empty strings")
    return [v.strip() for v in value]


def read_prompt_file(path: str | Path, class_names: Sequence[str]) -> tuple[dict[str, list[str]], list[str]]:
    """(names per dataset class, templates) from a prompt file; every dataset class must be named."""
    path = Path(path).expanduser()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PathkitError(f"prompt file {path}: cannot be read as JSON ({exc})") from None
    if isinstance(data, dict) and "classnames" not in data and len(data) == 1:
        data = next(iter(data.values()))  # CONCH's files wrap the prompts in {"0": {...}}
    if not isinstance(data, dict) or not isinstance(data.get("classnames"), dict):
        raise PathkitError(f'prompt file {path}: needs {{"classnames": {{"<class>": ["name", ...]}}}}')
    given = data["classnames"]
    missing = [c for c in class_names if c not in given]
    if missing:
        raise PathkitError(f"prompt file {path}: no names for the dataset class(es) {missing}")
    names = {c: _strings(given[c], f"prompt file {path}: classnames[{c!r}]") for c in class_names}
    templates = _strings(data["templates"], f"prompt file {path}: templates") if "templates" in data \
        else list(CONCH_TEMPLATES)
    return names, templates


def class_prompts(class_names: Sequence[str], prompt_file: str | Path | None = None,
                  templates: Sequence[str] | None = None) -> dict[str, list[str]]:
    """Every dataset class's prompts (templates x names), in the dataset's class order."""
    if prompt_file:
        names, file_templates = read_prompt_file(prompt_file, class_names)
    else:
        names, file_templates = {c: [c] for c in class_names}, list(CONCH_TEMPLATES)
    chosen = list(templates) if templates else file_templates
    bad = [t for t in chosen if PLACEHOLDER not in t]
    if bad:
        raise PathkitError(f"template(s) {bad[:3]} lack the placeholder {PLACEHOLDER}")
    return {c: [t.replace(PLACEHOLDER, name) for name in names[c] for t in chosen] for c in class_names}
