"""Patch benchmarks (HepatoBench part 1): whole-image feature extraction end to end (150 px PNGs in
a zip -> feature shards on disk) vs a bare forward loop of the same model on the same decoded,
resized and normalised tensors; and the kNN and logistic-regression heads on 87k x 1536 float16
features (HepatoBench's size, UNI2-h's width): time and peak memory, each head in its own process.

CPU (default): a ViT-S/16-sized encoder with random weights (benchmarks/bench_extract.py's).
GPU: `--device cuda --encoder uni2h` builds the full UNI2-h with random weights (bf16 autocast).

    .venv/bin/python benchmarks/bench_patches.py                       # CPU, a few minutes on 2 cores
    .venv/bin/python benchmarks/bench_patches.py --only heads          # the 87k heads only
    .venv/bin/python benchmarks/bench_patches.py --device cuda --encoder uni2h --patches 4096 --workers 8 \\
        --batch-size 256 --only extract
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

from bench_extract import bare_loop, bench_encoder


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages: the machine is shared, so every figure carries them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def make_zip(path: Path, n: int) -> list[tuple[str, str]]:
    """`n` synthetic 150 px HepatoBench-like PNGs in one zip; (case id, reference) pairs."""
    import numpy as np
    from pathkit_datasets.hepatobench import demo_texture
    from PIL import Image

    rng = np.random.default_rng(0)
    refs = []
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(n):
            out = io.BytesIO()
            Image.fromarray(demo_texture(i % 7, rng)).save(out, format="PNG")
            archive.writestr(f"P_{i}.png", out.getvalue())
            refs.append((f"P_{i}", f"{path}::P_{i}.png"))
    return refs


def decoded_tensors(refs: list[tuple[str, str]], prep: Any) -> Any:
    """The exact tensors the encoder sees: each patch decoded, resized whole, normalised."""
    import numpy as np
    import torch

    from pathkit_core.features.images import _INTERPOLATIONS, read_image

    size = (prep.size, prep.size)
    arrays = [np.asarray(read_image(ref).resize(size, resample=_INTERPOLATIONS[prep.interpolation]))
              for _, ref in refs]
    pixels = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2).float() / 255.0
    return ((pixels - torch.tensor(prep.mean).view(1, 3, 1, 1)) / torch.tensor(prep.std).view(1, 3, 1, 1)).contiguous()


def extraction(args: argparse.Namespace) -> None:
    """Bare forward vs encode_images end to end, in alternating pairs, best of `repeats` each."""
    import torch

    from pathkit_core.features.extract import default_workers
    from pathkit_core.features.images import Preprocessing, encode_images

    with bench_encoder(args) as (device, work, enc, ckpt, precision):
        refs = make_zip(work / "01_TUM.zip", args.patches)
        prep = Preprocessing.of(enc)
        pixels = decoded_tensors(refs, prep)
        if device.type == "cuda":
            pixels = pixels.pin_memory()
        model = enc.load(str(device), weights_path=ckpt)
        enc.load = lambda *a, **k: model  # the loaded model; decoding, batching and writing are real
        # one untimed pass first: imports, DataLoader and image-plugin set-up are fixed costs, and the
        # bare loop warms the model up likewise
        encode_images(enc, refs[:args.batch_size], work / "warm-up", weights_path=ckpt, batch_size=args.batch_size,
                      workers=args.workers, device=str(device), dtype=args.dtype, progress=False)
        bare, e2e = [], []
        for rep in range(args.repeats):
            bare.append(bare_loop(model, pixels, args.batch_size, device, precision))
            start = time.perf_counter()
            result = encode_images(enc, refs, work / f"store-{rep}", weights_path=ckpt, batch_size=args.batch_size,
                                   workers=args.workers, device=str(device), dtype=args.dtype, progress=False)
            e2e.append(time.perf_counter() - start)
            if result.encoded != len(refs):
                raise SystemExit(f"encoded {result.encoded} of {len(refs)}: {list(result.failed.items())[:3]}")
    n = len(refs)
    workers = default_workers(device) if args.workers is None else args.workers
    print(f"encoder {args.encoder} on {device} ({precision}), {n} patches of 150 px -> {prep.size} px, "
          f"batch {args.batch_size}, {workers} worker(s), torch threads {torch.get_num_threads()}")
    print(f"  bare forward loop (decoded tensors): {n / min(bare):8.1f} patches/s")
    print(f"  encode_images end to end (zip->disk):{n / min(e2e):8.1f} patches/s")
    pairs = sorted(b / e for b, e in zip(bare, e2e, strict=True))
    print(f"  ratio end-to-end / bare, best of each: {min(bare) / min(e2e):6.3f}   (goal >= 0.9)")
    print(f"  ratio per alternating pair: {', '.join(f'{r:.3f}' for r in pairs)} (median "
          f"{pairs[len(pairs) // 2]:.3f})")
    print(f"  loadavg after the run: {loadavg()}")


class _Features:
    """Items of random patch features in the form the heads read (`feature_matrix`, `targets`)."""

    def __init__(self, features: Any, labels: Any) -> None:
        self.features, self.labels = features, labels

    def __len__(self) -> int:
        return len(self.labels)

    def feature_matrix(self) -> Any:
        return self.features

    @property
    def targets(self) -> dict[str, int]:
        return {str(i): int(y) for i, y in enumerate(self.labels)}


def synthetic_features(n: int, dim: int, seed: int = 0) -> tuple[Any, Any]:
    """(`n` x `dim` float16 features, labels) of 7 classes: Gaussian class means, unequal class
    sizes like HepatoBench's."""
    import numpy as np
    import torch

    rng = np.random.default_rng(seed)
    sizes = np.array([0.17, 0.30, 0.10, 0.10, 0.17, 0.02, 0.14])
    labels = rng.choice(7, size=n, p=sizes / sizes.sum())
    centres = rng.normal(0, 1, (7, dim)).astype(np.float32)
    feats = torch.empty(n, dim, dtype=torch.float16)
    for start in range(0, n, 8192):  # drawn in float32 blocks: the data costs its float16 size, no more
        rows = labels[start:start + 8192]
        block = centres[rows] * 0.1 + rng.standard_normal((len(rows), dim), dtype=np.float32)
        feats[start:start + 8192] = torch.from_numpy(block.astype(np.float16))
    return feats, labels


def head_child(name: str, n: int, dim: int, test_fraction: float) -> None:
    """One head on `n` x `dim` float16 features of 7 classes (Gaussian class means, unequal class
    sizes like HepatoBench's): build (index or fit) and predict the test part; prints JSON."""
    import torch

    from pathkit_core.contracts import GeneratorSpec
    from pathkit_core.plugins import get_component
    from pathkit_tasks import TASK_PATCH_CLASSIFICATION

    feats, labels = synthetic_features(n, dim)
    n_test = int(n * test_fraction)
    train = _Features(feats[n_test:].float(), labels[n_test:])
    test = feats[:n_test].float()
    data_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    gen = get_component("generator", name)()
    spec = GeneratorSpec(task=TASK_PATCH_CLASSIFICATION, feature_dim=dim, hparams=gen.hparams({}),
                         class_names=tuple("ABCDEFG"), train_items=train, val_items=())
    start = time.perf_counter()
    model = gen.build(spec)
    built = time.perf_counter() - start
    start = time.perf_counter()
    with torch.no_grad():
        probs = torch.cat([model.probabilities(test[i:i + 4096]) for i in range(0, n_test, 4096)])
    predicted = time.perf_counter() - start
    accuracy = float((probs.argmax(1).numpy() == labels[:n_test]).mean())
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"head": name, "n_train": len(train), "n_test": n_test, "dim": dim, "build_s": built,
                      "predict_s": predicted, "peak_rss_mb": peak_mb, "before_mb": data_mb, "accuracy": accuracy,
                      "state": model.export_state(), "threads": torch.get_num_threads()}))


def heads(args: argparse.Namespace) -> None:
    for name in ("knn", "logistic-regression", "prototype"):
        out = subprocess.run([sys.executable, __file__, "--head-child", name, "--n", str(args.n), "--dim",
                              str(args.dim)], capture_output=True, text=True, check=False)
        if out.returncode:
            raise SystemExit(f"{name} failed:\n{out.stderr[-3000:]}")
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{name:20s} {r['n_train']} train + {r['n_test']} test x {r['dim']}: build {r['build_s']:7.1f} s, "
              f"predict {r['predict_s']:6.1f} s, peak RSS {r['peak_rss_mb']:6.0f} MB ({r['before_mb']:.0f} MB with "
              f"the features alone), accuracy "
              f"{r['accuracy']:.3f} {r['state']}; loadavg {loadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default="vit-s", help="vit-s (CPU default) or a registered encoder (uni2h)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--patches", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=None, help="DataLoader workers [pathkit's default]")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n", type=int, default=87_300, help="patches for the heads (HepatoBench: ~87.3k)")
    parser.add_argument("--dim", type=int, default=1536, help="feature width (UNI2-h: 1536)")
    parser.add_argument("--only", choices=("extract", "heads"), default=None)
    parser.add_argument("--head-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.head_child:
        head_child(args.head_child, args.n, args.dim, 0.2)
        return
    if args.only in (None, "extract"):
        extraction(args)
    if args.only in (None, "heads"):
        heads(args)


if __name__ == "__main__":
    main()
