"""Statistics of comparisons between benchmark cells, written once and taking arrays only.

- `paired`: paired bootstrap of score differences (cases, and seeds, resampled jointly), the paired
  sign-flip / approximate-randomisation test, McNemar's exact test.
- `delong`: DeLong's test for AUROC (fast algorithm of Sun & Xu 2014), binary and one-vs-rest macro.
- `multiple`: Holm and Benjamini-Hochberg adjusted p-values.
- `ranks`: average ranks, Friedman's test, the Nemenyi critical difference and cliques (Demšar 2006),
  win/tie/loss counts.

Nothing here reads files or knows about runs; docs/comparisons.md names the paper and equation each
function follows.
"""

from pathkit_bench.stats.delong import DeLongResult, auroc_covariance, delong_test, delong_test_ovr, weighted_auroc
from pathkit_bench.stats.multiple import adjust_pvalues, benjamini_hochberg, holm
from pathkit_bench.stats.paired import (
    BootstrapComparison,
    McNemarResult,
    PairwiseBootstrap,
    bootstrap_aurocs,
    bootstrap_means,
    mcnemar_exact,
    paired_bootstrap,
    pairwise_bootstrap,
    pairwise_bootstrap_auroc,
    pairwise_bootstrap_statistic,
    pairwise_from,
    seed_bootstrap_ci,
    sign_flip_test,
)
from pathkit_bench.stats.ranks import (
    FriedmanResult,
    average_ranks,
    cd_cliques,
    friedman_test,
    nemenyi_cd,
    nemenyi_q,
    win_tie_loss,
)

__all__ = [
    "BootstrapComparison",
    "DeLongResult",
    "FriedmanResult",
    "McNemarResult",
    "PairwiseBootstrap",
    "adjust_pvalues",
    "auroc_covariance",
    "average_ranks",
    "benjamini_hochberg",
    "bootstrap_aurocs",
    "bootstrap_means",
    "cd_cliques",
    "delong_test",
    "delong_test_ovr",
    "friedman_test",
    "holm",
    "mcnemar_exact",
    "nemenyi_cd",
    "nemenyi_q",
    "paired_bootstrap",
    "pairwise_bootstrap",
    "pairwise_bootstrap_auroc",
    "pairwise_bootstrap_statistic",
    "pairwise_from",
    "seed_bootstrap_ci",
    "sign_flip_test",
    "weighted_auroc",
    "win_tie_loss",
]
