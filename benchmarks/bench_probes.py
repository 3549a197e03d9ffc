"""Patch probes side by side with scikit-learn, in one process, interleaved pairs, outputs compared.

- logistic regression, UNI's protocol (C = D*K/100, max_iter 1000): pathkit's `logistic-regression`
  build (timed whole: whatever it imports is in its time) against scikit-learn's
  `LogisticRegression(C, max_iter=1000).fit` (scikit-learn imported before the timing, as a script
  would at its top). Test accuracy of both, and how many test labels they agree on.
- kNN, UNI's protocol (train-mean centring, L2 normalisation, k = 20, Euclidean, majority vote):
  pathkit's `knn` build + predict against `KNeighborsClassifier(20)` fit + predict on the same
  centred, normalised features (the normalisation inside scikit-learn's timing too).

- `--solvers`: the choice of solver for the logistic regression, measured. On the same problem
  (scikit-learn's objective at C = D*K/100, float64): pathkit's solver (SciPy's L-BFGS-B, the two
  products over the features in torch, OpenBLAS held to one thread), scikit-learn's lbfgs, and
  `torch.optim.LBFGS` (strong-Wolfe line search, scikit-learn's stopping rule: largest gradient
  component below 1e-4, history 10) on the raw features, on standardised features (the same optimum:
  the penalty rescaled by the standard deviations, so the coefficients map back exactly), and on
  standardised features warm-started along C/100, C/10, C. Each: median time of interleaved repeats,
  iterations, test accuracy, and the largest difference of coefficients and test probabilities from
  scikit-learn's. Then each side's import, cold, in a fresh process (what a first `build` or a
  script's top pays).

Features: 7 Gaussian classes (benchmarks/bench_patches.py's), float16 stored, float32 given to both.
scikit-learn is never installed by this script: without it, its side is skipped with a message.

    .venv/bin/python benchmarks/bench_probes.py [--n 20000] [--dim 768] [--pairs 3] [--threads 2]
    .venv/bin/python benchmarks/bench_probes.py --solvers --n 10000 --pairs 3
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from bench_patches import _Features, synthetic_features


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def split_features(args, dtype):
    """(train features, test features, train labels, test labels): `args.n` synthetic patches of
    `args.dim` features in `dtype`, the first fifth the test part; sets torch's threads."""
    import torch

    torch.set_num_threads(args.threads)
    feats, labels = synthetic_features(args.n, args.dim)
    n_test = args.n // 5
    return feats[n_test:].to(dtype), feats[:n_test].to(dtype), labels[n_test:], labels[:n_test]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="patches (a fifth of them the test part)")
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", choices=("lr", "knn"), default=None)
    parser.add_argument("--solvers", action="store_true", help="the logistic-regression solvers side by side")
    args = parser.parse_args()
    if args.solvers:
        solvers(args)
        return

    import numpy as np
    import torch

    from pathkit_core.contracts import GeneratorSpec
    from pathkit_core.plugins import get_component
    from pathkit_tasks import TASK_PATCH_CLASSIFICATION

    train_x, test_x, train_y, test_y = split_features(args, torch.float32)
    n_test = len(test_y)
    try:
        from sklearn.linear_model import LogisticRegression
        from sklearn.neighbors import KNeighborsClassifier
    except ImportError:
        print("scikit-learn: not installed, its side is skipped")
        LogisticRegression = KNeighborsClassifier = None  # noqa: N806
    print(f"{len(train_y):,} train / {n_test:,} test patches, {args.dim}-d, 7 classes, {args.threads} threads; "
          f"load average {loadavg()}")

    def pathkit(name: str):
        gen = get_component("generator", name)()
        spec = GeneratorSpec(task=TASK_PATCH_CLASSIFICATION, feature_dim=args.dim, hparams=gen.hparams({}),
                             class_names=tuple("ABCDEFG"), train_items=_Features(train_x, train_y), val_items=())
        t0 = time.perf_counter()
        model = gen.build(spec)
        with torch.no_grad():
            probs = torch.cat([model.probabilities(test_x[i:i + 4096]) for i in range(0, n_test, 4096)])
        return time.perf_counter() - t0, probs.argmax(1).numpy(), model.export_state()

    c = args.dim * 7 / 100

    def sk_lr():
        t0 = time.perf_counter()
        model = LogisticRegression(C=c, max_iter=1000, random_state=0).fit(train_x.numpy(), train_y)
        labels = model.predict(test_x.numpy())  # timed, as pathkit's test predictions are
        return time.perf_counter() - t0, labels, {"n_iter": int(model.n_iter_.max())}

    def sk_knn():
        t0 = time.perf_counter()
        mean = train_x.numpy().mean(axis=0)

        def unit(x):
            x = x - mean
            return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)

        model = KNeighborsClassifier(n_neighbors=20).fit(unit(train_x.numpy()), train_y)
        labels = model.predict(unit(test_x.numpy()))  # the neighbour search: timed, as pathkit's is
        return time.perf_counter() - t0, labels, {}

    runs = {"lr": ("logistic-regression", sk_lr, "LogisticRegression.fit (lbfgs)"),
            "knn": ("knn", sk_knn, "KNeighborsClassifier(20) fit + predict")}
    for key, (name, peer, peer_name) in runs.items():
        if args.only and key != args.only:
            continue
        if LogisticRegression is None:
            print(f"{name}: scikit-learn not installed, skipped")
            continue
        mine, theirs = [], []
        for pair in range(args.pairs + 1):  # pair 0 warms up (first call's allocations), not counted
            order = (pathkit, peer) if pair % 2 else (peer, pathkit)
            out = {}
            for fn in order:
                out[fn] = fn(name) if fn is pathkit else fn()
            if pair:
                mine.append(out[pathkit][0])
                theirs.append(out[peer][0])
        ratios = sorted(t / m for t, m in zip(theirs, mine, strict=True))
        acc_pk = float((out[pathkit][1] == test_y).mean())
        acc_sk = float((out[peer][1] == test_y).mean())
        agree = float((out[pathkit][1] == out[peer][1]).mean())
        print(f"{name}: pathkit {sorted(mine)[len(mine) // 2]:.3f} s (median; {out[pathkit][2]}), "
              f"scikit-learn {peer_name} {sorted(theirs)[len(theirs) // 2]:.3f} s ({out[peer][2]}); "
              f"scikit-learn / pathkit per pair {', '.join(f'{r:.2f}' for r in ratios)} -> median "
              f"{ratios[len(ratios) // 2]:.2f}x; test accuracy {acc_pk:.4f} vs {acc_sk:.4f}, same label on "
              f"{agree:.2%} of the test patches")
        if key == "lr":
            cold_imports()
    print(f"load average {loadavg()}")


# --------------------------------------------------------------------------- --solvers


def _torch_lbfgs(x, index, k: int, c: float, *, standardise: bool, grid: tuple[float, ...] = (1.0,)):
    """scikit-learn's objective (mean cross-entropy + ||W||^2 / (2 C n), intercept unpenalised)
    minimised by torch.optim.LBFGS, optionally on standardised features with the penalty
    rescaled (the same optimum) and warm-started along the factors of C in `grid`; returns
    (coefficients (K, D), intercepts (K,), iterations) on the raw features."""
    import torch

    n, d = x.shape
    mean = x.mean(0) if standardise else torch.zeros(d, dtype=x.dtype)
    sd = x.std(0).clamp_min(1e-12) if standardise else torch.ones(d, dtype=x.dtype)
    z = (x - mean) / sd
    v = torch.zeros(k, d, dtype=x.dtype, requires_grad=True)
    b = torch.zeros(k, dtype=x.dtype, requires_grad=True)
    iterations = 0
    for factor in grid:
        l2 = 1.0 / (c * factor * n)
        opt = torch.optim.LBFGS([v, b], lr=1, max_iter=1000, tolerance_grad=1e-4, tolerance_change=64 * 2.2e-16,
                                history_size=10, line_search_fn="strong_wolfe")

        def closure(l2=l2, opt=opt):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(torch.addmm(b, z, v.T), index) + 0.5 * l2 * ((v / sd) ** 2).sum()
            loss.backward()
            return loss

        opt.step(closure)
        iterations += opt.state[opt._params[0]]["n_iter"]
    w = (v / sd).detach()
    return w, (b - w @ mean).detach(), iterations


def _cold_import(statement: str) -> float:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def solvers(args) -> None:
    import torch
    from pathkit_generators.logistic_regression import fit_lbfgs

    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        print("scikit-learn: not installed, the solver comparison needs it as the reference; skipped")
        return
    train_x, test_x, train_y, test_y = split_features(args, torch.float64)
    n_test = len(test_y)
    index = torch.as_tensor(train_y, dtype=torch.int64)
    k, c = 7, args.dim * 7 / 100
    print(f"solvers: {len(train_y):,} train / {n_test:,} test, {args.dim}-d, 7 classes, C = {c:g}, {args.threads} "
          f"threads; load average {loadavg()}")

    def sk():
        model = LogisticRegression(C=c, max_iter=1000, random_state=0).fit(train_x.numpy(), train_y)
        return torch.from_numpy(model.coef_), torch.from_numpy(model.intercept_), int(model.n_iter_.max())

    contenders = {
        "scikit-learn lbfgs": sk,
        "pathkit: SciPy L-BFGS-B, products in torch": lambda: fit_lbfgs(train_x, index, list(range(k)), c, 1000),
        "torch.optim.LBFGS, raw features": lambda: _torch_lbfgs(train_x, index, k, c, standardise=False),
        "torch.optim.LBFGS, standardised": lambda: _torch_lbfgs(train_x, index, k, c, standardise=True),
        "torch.optim.LBFGS, standardised, warm start C/100, C/10, C":
            lambda: _torch_lbfgs(train_x, index, k, c, standardise=True, grid=(0.01, 0.1, 1.0)),
    }
    times: dict[str, list[float]] = {name: [] for name in contenders}
    fitted: dict[str, tuple] = {}
    for pair in range(args.pairs + 1):  # repeat 0 warms up (imports, first allocations), not counted
        order = list(contenders) if pair % 2 else list(reversed(contenders))
        for name in order:
            t0 = time.perf_counter()
            fitted[name] = contenders[name]()
            if pair:
                times[name].append(time.perf_counter() - t0)
    ref_w, ref_b, _ = fitted["scikit-learn lbfgs"]
    ref_p = torch.softmax(test_x @ ref_w.T + ref_b, 1)
    sk_median = sorted(times["scikit-learn lbfgs"])[args.pairs // 2]
    for name in contenders:
        w, b, iters = fitted[name]
        probs = torch.softmax(test_x @ w.T + b, 1)
        med = sorted(times[name])[args.pairs // 2]
        print(f"  {name}: median {med:.3f} s (scikit-learn / it {sk_median / med:.2f}x), {iters} iterations, "
              f"test accuracy {float((probs.argmax(1).numpy() == test_y).mean()):.4f}, coefficients within "
              f"{float((w - ref_w).abs().max()):.1e} and probabilities within {float((probs - ref_p).abs().max()):.1e} "
              "of scikit-learn's")
    cold_imports(torch_optimiser=True)
    print(f"load average {loadavg()}")


def cold_imports(torch_optimiser: bool = False) -> None:
    """What each side imports on its first fit, cold, each in a fresh process: scikit-learn's
    estimator (a script's top) and SciPy's optimiser (pathkit's first `build`; torch is imported
    by then). Neither is inside the timed pairs (scikit-learn imported before, the warm-up build)."""
    line = (f"  cold imports (a fresh process each): scikit-learn's LogisticRegression "
            f"{_cold_import('from sklearn.linear_model import LogisticRegression'):.2f} s, SciPy's optimiser "
            f"(pathkit's first build) {_cold_import('import scipy.optimize'):.2f} s")
    if torch_optimiser:
        line += (f", torch {_cold_import('import torch'):.2f} s, torch + an LBFGS optimiser "
                 f"{_cold_import('import torch; torch.optim.LBFGS([torch.zeros(1)])'):.2f} s")
    print(line)


if __name__ == "__main__":
    main()
