"""The 33 GOLDMARK tumour-biomarker tasks: paper Table 1 (OncoKB level 1-3 labels; cohort counts)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GoldmarkTask:
    """One tumour type x biomarker task with the paper's patient counts per cohort."""

    tumor_code: str
    tumor_type: str
    gene: str
    mskcc_total: int
    mskcc_positive: int
    mskcc_negative: int
    tcga_total: int
    tcga_positive: int
    tcga_negative: int

    @property
    def key(self) -> str:
        """The view name: `goldmark:<key>`, e.g. `goldmark:COAD-MSI`."""
        return f"{self.tumor_code}-{self.gene}"

    @property
    def tcga_project(self) -> str:
        return f"TCGA-{self.tumor_code}"

    def counts(self, cohort: str) -> tuple[int, int, int] | None:
        """(total, positive, negative) in the paper for "TCGA" or "MSKCC"; None for another cohort."""
        name = cohort.upper()
        if name == "TCGA":
            return (self.tcga_total, self.tcga_positive, self.tcga_negative)
        if name in ("MSKCC", "MSK", "IMPACT", "MSK-IMPACT"):
            return (self.mskcc_total, self.mskcc_positive, self.mskcc_negative)
        return None

    def as_dict(self) -> dict[str, object]:
        return {"key": self.key, "tumor_code": self.tumor_code, "tumor_type": self.tumor_type, "gene": self.gene,
                "mskcc": {"total": self.mskcc_total, "positive": self.mskcc_positive,
                          "negative": self.mskcc_negative},
                "tcga": {"total": self.tcga_total, "positive": self.tcga_positive, "negative": self.tcga_negative}}


# Tumour code, tumour type, gene; MSKCC total/positive/negative; TCGA total/positive/negative.
_TABLE_1 = """
BLCA|Bladder Urothelial Carcinoma|PIK3CA|2031|337|1694|386|77|309
BLCA|Bladder Urothelial Carcinoma|FGFR3|2031|393|1638|386|34|352
BLCA|Bladder Urothelial Carcinoma|ERBB2|2031|207|1824|386|37|349
BLCA|Bladder Urothelial Carcinoma|TSC1|2031|131|1900|386|27|359
BLCA|Bladder Urothelial Carcinoma|ERCC2|2031|141|1890|386|28|358
BRCA|Breast Carcinoma|PIK3CA|2735|966|1769|1000|354|646
CESC|Cervical Squamous Cell Carcinoma|PIK3CA|171|62|109|266|82|184
COAD|Colon Adenocarcinoma|PIK3CA|2959|605|2354|550|130|420
COAD|Colon Adenocarcinoma|BRAF|2959|318|2641|550|59|491
COAD|Colon Adenocarcinoma|ATM|2959|153|2806|550|63|487
COAD|Colon Adenocarcinoma|PTEN|2959|183|2776|550|38|512
COAD|Colon Adenocarcinoma|MSI|2959|350|2609|405|70|335
GBM|Glioblastoma Multiforme|PTEN|816|263|553|244|77|167
UCEC|Endometrial Cancer|PTEN|2062|972|1090|499|319|180
UCEC|Endometrial Cancer|PIK3CA|2062|904|1158|499|254|245
UCEC|Endometrial Cancer|FBXW7|2062|279|1783|499|94|405
UCEC|Endometrial Cancer|ATM|2062|142|1920|499|73|426
UCEC|Endometrial Cancer|POLE|2062|114|1948|499|49|450
LGG|Glioma|IDH1|449|216|233|491|382|109
LGG|Glioma|PIK3CA|449|41|408|491|42|449
HNSC|Head and Neck Carcinoma|PIK3CA|485|84|401|431|66|365
HNSC|Head and Neck Carcinoma|HRAS|485|11|474|431|25|406
LUAD|Lung Adenocarcinoma|KRAS|923|273|650|465|171|294
LUAD|Lung Adenocarcinoma|EGFR|923|273|650|465|51|414
SKCM|Melanoma|BRAF|886|213|673|432|233|199
SKCM|Melanoma|NRAS|886|143|743|432|112|320
SKCM|Melanoma|PTEN|886|63|823|432|50|382
SKCM|Melanoma|MAP2K1|886|38|848|432|26|406
PAAD|Pancreatic Adenocarcinoma|KRAS|3018|2674|344|181|136|45
PCPG|Pheochromocytoma/Paraganglioma|HRAS|18|2|16|176|19|157
STAD|Stomach Adenocarcinoma|PIK3CA|742|69|673|374|60|314
THCA|Thyroid Cancer|BRAF|920|399|521|495|296|199
THCA|Thyroid Cancer|NRAS|920|130|790|495|41|454
"""


def _parse(table: str) -> tuple[GoldmarkTask, ...]:
    tasks = []
    for line in table.strip().splitlines():
        code, tumour, gene, *numbers = line.split("|")
        tasks.append(GoldmarkTask(code, tumour, gene, *(int(n) for n in numbers)))
    return tuple(tasks)


TASKS: tuple[GoldmarkTask, ...] = _parse(_TABLE_1)
TASKS_BY_KEY: dict[str, GoldmarkTask] = {t.key: t for t in TASKS}

# The eight best tasks by combined median AUROC across encoders and settings (paper Figure 3).
TOP8_TASKS: tuple[str, ...] = (
    "THCA-BRAF", "BLCA-FGFR3", "COAD-MSI", "UCEC-PTEN", "THCA-NRAS", "LGG-IDH1", "LUAD-EGFR", "COAD-BRAF",
)

# Published aggregate AUROCs to sanity-check against (paper abstract and Table 2).
PUBLISHED_MEAN_AUROC = {"TCGA-CV": 0.689, "TCGA->MSKCC": 0.630}
PUBLISHED_TOP8_MEAN_AUROC = {"TCGA-CV": 0.831, "TCGA->MSKCC": 0.801}


def normalise_task_key(name: str) -> str:
    """`coad-msi`, `COAD:MSI`, `COAD_MSI` and `COAD MSI` all name `COAD-MSI`."""
    cleaned = name.strip().replace(":", "-").replace("_", "-").replace(" ", "-")
    code, _, gene = cleaned.partition("-")
    return f"{code.upper()}-{gene.upper()}" if gene else cleaned.upper()

