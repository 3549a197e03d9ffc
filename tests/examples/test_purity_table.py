"""The example plugin's own table dataset, `purity-table`, written against the public helper API
(`pathkit_sdk`) alone: a TSV table, option `splits_file` and `--skip-missing` come from the
helpers, and no module of the example imports a private name of pathkit or of another plugin
distribution (its pyproject depends on `pathkit` only)."""

from __future__ import annotations

import ast
import csv
import json
import random
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "pathkit-example-plugin"
# what the example may import from pathkit: the distribution it depends on ships these packages,
# and the built-in task names of `pathkit_tasks` (its package face, not its task modules)
PUBLIC_PACKAGES = ("pathkit_core", "pathkit_sdk")
PUBLIC_MODULES = ("pathkit_tasks",)
SPLITS = {"train": 4, "val": 2, "test": 2}


def private_imports(source: str, where: str) -> list[str]:
    """Imports of pathkit code a third-party plugin may not rely on: a `_`-prefixed module or name
    of any pathkit package, or any module of a pathkit distribution other than `pathkit`
    (pathkit_datasets, pathkit_metrics, ...: not a dependency, and private to pathkit)."""
    found = []
    for node in ast.walk(ast.parse(source, where)):
        if isinstance(node, ast.Import):
            imported = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported = [(node.module, alias.name) for alias in node.names]
        else:
            continue
        for module, name in imported:
            parts = module.split(".")
            if not parts[0].startswith("pathkit_") or parts[0] == "pathkit_example_plugin":
                continue
            public = parts[0] in PUBLIC_PACKAGES or module in PUBLIC_MODULES
            if not public or any(p.startswith("_") for p in parts) or (name is not None and name.startswith("_")):
                found.append(f"{where}:{node.lineno}: {module}{'.' + name if name else ''}")
    return found


def test_the_private_import_check_finds_what_it_looks_for():
    bad = ("from pathkit_datasets._cohort import read_table\n"
           "from pathkit_datasets.slides_csv import SlidesCSV\n"
           "import pathkit_core.run._private\n"
           "from pathkit_core.wsi import _helper\n"
           "from pathkit_core.contracts import _hidden\n"
           "from pathkit_tasks.report.task import ReportTask\n"
           "def later():\n    from pathkit_metrics._text_inputs import option_number\n")
    assert len(private_imports(bad, "bad.py")) == 7
    good = ("from pathkit_sdk import read_table, CohortDataset\nfrom pathkit_core.contracts import Case\n"
            "import torch\nfrom pathkit_example_plugin.regression import TASK_SLIDE_REGRESSION\n"
            "from __future__ import annotations\nfrom .regression import _number\n"
            "from pathkit_tasks import TASK_REPORT\n")
    assert private_imports(good, "good.py") == []


def test_the_example_plugin_imports_no_private_name_and_reads_tables_through_the_sdk():
    found = []
    for path in sorted((EXAMPLE / "pathkit_example_plugin").rglob("*.py")):
        found += private_imports(path.read_text(), str(path.relative_to(REPO)))
    assert not found, "the example plugin imports private names: " + "; ".join(found)
    tree = ast.parse((EXAMPLE / "pathkit_example_plugin" / "purity_demo.py").read_text())
    from_sdk = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "pathkit_sdk"
                for a in n.names}
    assert {"read_table", "cohort_rows", "choose_split", "CohortDataset", "write_synthetic_slide"} <= from_sdk
    dependencies = __import__("tomllib").loads((EXAMPLE / "pyproject.toml").read_text())["project"]["dependencies"]
    assert [d.split(">")[0] for d in dependencies] == ["pathkit"]


@pytest.fixture(scope="module")
def cohort(tmp_path_factory) -> Path:
    """A user's folder: 8 small synthetic slides, a TSV table (absolute paths, a patient column, the
    target under another name, a follow-up column) with one row whose slide does not exist, and a
    split file; no split column."""
    from pathkit_example_plugin.purity_demo import STROMA, TUMOUR

    from pathkit_sdk import Blob, write_synthetic_slide

    root = tmp_path_factory.mktemp("purity-user")
    rng = random.Random(3)
    rows, splits = [], []
    for part, n in SPLITS.items():
        for i in range(n):
            slide_id, purity = f"SYN-{part}-{i}", round(rng.uniform(0.1, 0.9), 3)
            blobs = [Blob(0.3, 0.5, 0.2, 0.3, colour=TUMOUR, nuclei_density=2.0),
                     Blob(0.7, 0.5, 0.2, 0.3, colour=STROMA, nuclei_density=0.4)]
            slide = write_synthetic_slide(root / "wsi" / f"{slide_id}.tiff", width=768, height=768, mpp=0.5,
                                          tissue=blobs, seed=rng.randrange(1 << 20))
            rows.append([str(slide), f"PAT-{part}", str(purity), str(12 + i)])
            splits.append((slide_id, part))
    rows.append([str(root / "wsi" / "SYN-gone.tiff"), "PAT-gone", "0.5", "3"])
    lines = ["slide_path\tpatient_id\tTumour_Purity\tfollow_up_months", *("\t".join(r) for r in rows)]
    (root / "cohort.tsv").write_text("\n".join(lines) + "\n")
    (root / "splits.csv").write_text("case_id,split\n" + "".join(f"{c},{p}\n" for c, p in splits))
    return root


OPTIONS = {"table": "cohort.tsv", "target_column": "tumour_purity", "splits_file": "splits.csv"}


def test_purity_table_uses_the_split_file_exactly_and_records_the_missing_slide(cohort, tmp_path):
    from pathkit_example_plugin.purity_demo import PurityTable

    ds = PurityTable(cohort, **OPTIONS, skip_missing=True, workdir=str(tmp_path / "ws"))
    ds.validate()
    assert ds.splits() == {p: [f"SYN-{p}-{i}" for i in range(n)] for p, n in SPLITS.items()}
    assert ds.split_facts()["source"] == "given" and ds.split_facts()["file"] == str(cohort / "splits.csv")
    assert list(ds.excluded_cases()) == ["SYN-gone"]
    assert "slide file not found" in ds.excluded_cases()["SYN-gone"]
    case = next(ds.cases("test"))
    assert isinstance(case.target, float) and case.patient_id == "PAT-test"
    assert case.meta == {"follow_up_months": "12"}  # every other column reaches the model: a leakage trap
    with pytest.raises(Exception, match=r"1 slide file\(s\) do not exist: line 10"):
        PurityTable(cohort, **OPTIONS, workdir=str(tmp_path / "ws")).validate()


def test_purity_table_runs_end_to_end_from_a_users_folder(installed_registry, cli, cohort, tmp_path, request):
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    request.addfinalizer(lambda: torch.set_num_threads(threads))  # later tests keep the session's setting
    options = [arg for key, value in OPTIONS.items() for arg in ("--dataset-option", f"{key}={value}")]
    result = cli("run", "-d", "purity-table", "--dataset-root", cohort, "-e", "tiny-vit", "-g", "mean-pool-regressor",
                 *options, "--skip-missing", "--max-epochs", "5", "--workdir", tmp_path / "ws", "--cpu")
    assert result.exit_code == 0, result.stdout + result.stderr
    run_dir = next((tmp_path / "ws" / "runs" / "purity-table" / "tiny-vit" / "mean-pool-regressor").iterdir())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["split"]["source"] == "given" and list(metrics["excluded_cases"]) == ["SYN-gone"]
    assert set(metrics["metrics"]["regression"]) >= {"MAE", "RMSE", "pearson_r"}
    predicted = [json.loads(line)["id"] for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert sorted(predicted) == ["SYN-test-0", "SYN-test-1"]
    with (cohort / "cohort.tsv").open() as fh:
        assert len(list(csv.DictReader(fh, dialect="excel-tab"))) == 9  # the user's table is left as it was
