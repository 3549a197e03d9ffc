"""A slide cohort table over empty slide files, for the tasks' cohort-reader tests."""

from __future__ import annotations

from pathlib import Path


def write_slide_table(root: Path, name: str, columns: str, rows: list[str]) -> Path:
    """`root/name` with the header `slide_path,<columns>` and one line per row, each naming its own
    empty slide file `slides/S<i>.tiff`; returns `root`."""
    (root / "slides").mkdir(parents=True, exist_ok=True)
    lines = [f"slide_path,{columns}"]
    for i, row in enumerate(rows):
        (root / "slides" / f"S{i}.tiff").write_bytes(b"")
        lines.append(f"slides/S{i}.tiff,{row}")
    (root / name).write_text("\n".join(lines) + "\n")
    return root
