"""Patch probes side by side with scikit-learn, in one process, interleaved pairs, outputs compared.

- logistic regression, UNI's protocol (C = D*K/100, max_iter 1000): pathkit's `logistic-regression`
  build (timed whole: whatever it imports is in its time) against scikit-learn's
  `LogisticRegression(C, max_iter=1000).fit` (scikit-learn imported before the timing, as a script
  would at its top). Test accuracy of both, and how many test labels they agree on.
- kNN, UNI's protocol (train-mean centring, L2 normalisation, k = 20, Euclidean, majority vote):
  pathkit's `knn` build + predict against `KNeighborsClassifier(20)` fit + predict on the same
  centred, normalised features (the normalisation inside scikit-learn's timing too).

Features: 7 Gaussian classes (benchmarks/bench_patches.py's), float16 stored, float32 given to both.
scikit-learn is never installed by this script: without it, its side is skipped with a message.

    .venv/bin/python benchmarks/bench_probes.py [--n 20000] [--dim 768] [--pairs 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench_patches import _Features, synthetic_features


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="patches (a fifth of them the test part)")
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", choices=("lr", "knn"), default=None)
    args = parser.parse_args()

    import numpy as np
    import torch

    from pathkit_core.contracts import GeneratorSpec
    from pathkit_core.plugins import get_component
    from pathkit_tasks import TASK_PATCH_CLASSIFICATION

    torch.set_num_threads(args.threads)
    feats, labels = synthetic_features(args.n, args.dim)
    n_test = args.n // 5
    train_x, test_x = feats[n_test:].float(), feats[:n_test].float()
    train_y, test_y = labels[n_test:], labels[:n_test]
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
        return time.perf_counter() - t0, model.predict(test_x.numpy()), {"n_iter": int(model.n_iter_.max())}

    def sk_knn():
        t0 = time.perf_counter()
        mean = train_x.numpy().mean(axis=0)

        def unit(x):
            x = x - mean
            return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)

        model = KNeighborsClassifier(n_neighbors=20).fit(unit(train_x.numpy()), train_y)
        return time.perf_counter() - t0, model.predict(unit(test_x.numpy())), {}

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
    print(f"load average {loadavg()}")


if __name__ == "__main__":
    main()
