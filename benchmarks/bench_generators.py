"""Report generators: training speed and peak memory at 1k/5k/10k tiles (fused vs materialised
attention), batched vs one-case beam decoding, and the fraction of distinct generated reports.

Measured side by side in one run, each training configuration in a fresh child process so that
its peak memory (resident set on CPU, `max_memory_allocated` on GPU) is its own:

- training steps per second and peak memory of `wsi-caption` and `histgen` (PathBench defaults:
  d_model 512, 3 layers, 1024-d tiles) at 1,000, 5,000 and 10,000 tiles, with
  `scaled_dot_product_attention` (pathkit) and with the score matrix materialised (the public
  WSI-Caption / HistGen code); a materialised run whose attention matrices alone would exceed
  `--naive-limit-gb` is skipped and its estimate printed instead;
- decoding throughput (beam 3, reports per second), all cases batched vs one case at a time,
  with the outputs checked identical;
- after a short training on synthetic cases whose report depends on the features, the fraction
  of distinct reports among the validation predictions (PathReportEval warns of collapse to a
  few reports).

    .venv/bin/python benchmarks/bench_generators.py [--tiles 1000,5000,10000] [--steps 1]
        [--only train,decode,distinct] [--threads 2] [--naive-limit-gb 6]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import sys
import time
from typing import Any

FEATURE_DIM = 1024
REPORTS = (
    "Stomach, endoscopic biopsy;\n  Tubular adenoma with low grade dysplasia",
    "Stomach, endoscopic biopsy;\n  Adenocarcinoma, poorly differentiated ",
    "Colon, colonoscopic biopsy;\n  Adenocarcinoma, moderately differentiated",
    "Breast, sono-guided core biopsy;\n  Invasive carcinoma of no special type, grade II "
    "(Tubule formation: 3, Nuclear grade: 2, Mitoses: 1)",
    "Uterine cervix, colposcopic biopsy;\n  Low-grade squamous intraepithelial lesion (LSIL; CIN 1)",
    "Uterine cervix, colposcopic biopsy;\n  High-grade squamous intraepithelial lesion (HSIL; CIN 3)",
    "Lung, biopsy;\n  Squamous cell carcinoma",
    "Prostate, biopsy;\n  No tumor present",
)


# Fixed per-generator settings: BiGen's knowledge bank uses the offline embedder, so the figures do
# not depend on whether CONCH's files happen to be on the machine.
BENCH_HPARAMS: dict[str, dict[str, Any]] = {"bigen": {"text_embedder": "hashed-ngram"}}


def build(name: str, feature_dim: int = FEATURE_DIM, **hparams: Any):
    from pathkit_generators.bigen import BiGen
    from pathkit_generators.histgen import HistGen
    from pathkit_generators.scout import Scout
    from pathkit_generators.wsi_caption import WSICaption

    from pathkit_core.contracts import GeneratorSpec

    cls = {"wsi-caption": WSICaption, "histgen": HistGen, "bigen": BiGen, "scout": Scout}[name]
    hparams = {**BENCH_HPARAMS.get(name, {}), **hparams}
    spec = GeneratorSpec(task="report", feature_dim=feature_dim, hparams=hparams, train_targets=list(REPORTS),
                         dataset="reg2025")
    return cls().build(spec)


def naive_attention_gb(name: str, tiles: int, layers: int = 3, heads: int = 4) -> float:
    """Attention matrices a materialised training step keeps for backward (scores, softmax,
    dropout mask and output, float32), which dominate its memory at large tile counts."""
    if name in ("wsi-caption", "scout"):
        n = int((tiles + 1) ** 0.5 + 0.999999) ** 2  # prompt + tiles padded to a square
        return layers * heads * n * n * (4 + 4 + 1 + 4) / 1e9
    if name == "bigen":
        return heads * tiles * (4 + 4 + 1 + 4) / 1e9  # one latent query over the tiles
    return heads * tiles * 512 * 13 / 1e9  # HistGen: tiles x 512 prototype responses


def _train_child(name: str, tiles: int, impl: str, steps: int, threads: int, queue: Any) -> None:
    import torch
    from pathkit_generators._text.attention import attention_implementation

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    # SCOUT's attention dropout (0.4) has no fused CPU kernel, so on CPU it would materialise the
    # scores even through scaled_dot_product_attention: benchmark it without on CPU.
    model = build(name, **({"dropout": 0.0} if name == "scout" and not cuda else {})).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=7e-5, weight_decay=1e-5)
    item = {"case_id": "bench", "features": torch.randn(tiles, FEATURE_DIM), "coords": None, "target": REPORTS[3]}
    batch = model.collate([item])
    batch = {k: v.to(device) if hasattr(v, "to") else v for k, v in batch.items()}
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    else:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    times = []
    try:
        with attention_implementation(impl):
            for _ in range(steps):
                start = time.perf_counter()
                loss = model.training_step(batch)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                if cuda:
                    torch.cuda.synchronize()
                times.append(time.perf_counter() - start)
    except (RuntimeError, MemoryError) as exc:  # out of memory on the device or host
        queue.put({"error": str(exc).splitlines()[0][:120]})
        return
    if cuda:
        peak = torch.cuda.max_memory_allocated() - before
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    queue.put({"steps_per_s": len(times) / sum(times), "peak_gb": peak / 1e9, "loss": float(loss.detach())})


def run_training(names: list[str], tile_counts: list[int], steps: int, threads: int, limit_gb: float) -> None:
    ctx = mp.get_context("spawn")
    print(f"\n## training step: batch 1, PathBench default architecture, {steps} step(s), {threads} thread(s)")
    print("| generator | tiles | fused steps/s | fused peak GB | materialised steps/s | materialised peak GB | "
          "speed ratio | memory ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        for tiles in tile_counts:
            results = {}
            for impl in ("sdpa", "naive"):
                estimate = naive_attention_gb(name, tiles)
                if impl == "naive" and estimate > limit_gb:
                    results[impl] = {"skipped": f"needs about {estimate:.0f} GB of attention matrices"}
                    continue
                queue = ctx.Queue()
                proc = ctx.Process(target=_train_child, args=(name, tiles, impl, steps, threads, queue))
                proc.start()
                proc.join()
                results[impl] = queue.get() if not queue.empty() else {"error": f"exit code {proc.exitcode}"}
            fused, naive = results["sdpa"], results["naive"]

            def cell(r: dict, key: str, fmt: str) -> str:
                return fmt.format(r[key]) if key in r else r.get("skipped") or r.get("error", "?")

            speed = (f"{fused['steps_per_s'] / naive['steps_per_s']:.2f}x"
                     if "steps_per_s" in fused and "steps_per_s" in naive else "-")
            memory = (f"{naive['peak_gb'] / max(fused['peak_gb'], 1e-9):.1f}x"
                      if "peak_gb" in fused and "peak_gb" in naive else "-")
            cells = [cell(fused, "steps_per_s", "{:.3f}"), cell(fused, "peak_gb", "{:.2f}"),
                     cell(naive, "steps_per_s", "{:.3f}"), cell(naive, "peak_gb", "{:.2f}"), speed, memory]
            print(f"| {name} | {tiles:,} | " + " | ".join(cells) + " |", flush=True)


def synthetic_cases(n: int, seed: int, tiles: tuple[int, int], dim: int, classes: int) -> list[dict]:
    """Cases whose report is REPORTS[c], c being the feature dimension raised in every tile."""
    import random

    import torch

    gen, rng = torch.Generator().manual_seed(seed), random.Random(seed)
    cases = []
    for i in range(n):
        c = rng.randrange(classes)
        count = rng.randint(*tiles)
        features = torch.randn(count, dim, generator=gen)
        features[:, c] += 5.0
        cases.append({"case_id": f"s{seed}-{i}", "features": features, "coords": None, "target": REPORTS[c]})
    return cases


def run_decoding(names: list[str], threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    print(f"\n## decoding: beam 3, 32 cases of 500 tiles, untrained model (every report runs to 64 "
          f"tokens), {threads} thread(s)")
    print("| generator | batched reports/s | one-at-a-time reports/s | ratio | identical outputs |")
    print("|---|---|---|---|---|")
    for name in names:
        torch.manual_seed(0)
        model = build(name, max_tokens=65).eval()
        cases = synthetic_cases(32, 5, (500, 500), FEATURE_DIM, len(REPORTS))
        start = time.perf_counter()
        batched = model.predict(model.collate(cases))
        t_batched = time.perf_counter() - start
        start = time.perf_counter()
        single = [model.predict(model.collate([c]))[0] for c in cases]
        t_single = time.perf_counter() - start
        print(f"| {name} | {len(cases) / t_batched:.2f} | {len(cases) / t_single:.2f} | "
              f"{t_single / t_batched:.2f}x | {batched == single} |", flush=True)


def run_distinct(names: list[str], threads: int) -> None:
    import tempfile

    import torch

    from pathkit_core.training.trainer import TrainConfig, fit, load_checkpoint, predict, seed_everything

    torch.set_num_threads(threads)
    print("\n## distinct reports among predictions: 8 report classes, 64 train / 32 validation cases, "
          "d_model 64, 15 epochs")
    print("| generator | distinct predictions / cases | distinct references | exact-match accuracy | "
          "most-frequent-report accuracy |")
    print("|---|---|---|---|---|")
    train = synthetic_cases(64, 1, (8, 32), 32, len(REPORTS))
    val = synthetic_cases(32, 2, (8, 32), 32, len(REPORTS))
    for name in names:
        seed_everything(0)
        extra = ({"d_vf": 64, "cmm_size": 128, "prototype_num": 32, "region_size": 16, "topk": 8}
                 if name == "histgen" else {})
        model = build(name, feature_dim=32, d_model=64, d_ff=128, num_heads=4, num_layers=1, drop_prob_lm=0.1,
                      max_tokens=64, **extra)
        with tempfile.TemporaryDirectory() as out:
            result = fit(model, train, val, TrainConfig(max_epochs=15, lr=3e-3, batch_size=4, progress=False,
                                                       cpu=True, early_stop_patience=None), out)
            load_checkpoint(result.best_checkpoint, model)
        preds = predict(model, val, batch_size=32)
        distinct = len(set(preds.values()))
        accuracy = sum(preds[c["case_id"]] == c["target"] for c in val) / len(val)
        top = max(set(c["target"] for c in train), key=[c["target"] for c in train].count)
        baseline = sum(c["target"] == top for c in val) / len(val)
        print(f"| {name} | {distinct}/{len(val)} = {distinct / len(val):.2f} | "
              f"{len(set(c['target'] for c in val))} | {accuracy:.2f} | {baseline:.2f} |", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiles", default="1000,5000,10000")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--generators", default="wsi-caption,histgen,bigen,scout")
    parser.add_argument("--only", default="train,decode,distinct")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--naive-limit-gb", type=float, default=6.0)
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.generators.split(",") if n.strip()]
    sections = {s.strip() for s in args.only.split(",")}
    print(json.dumps({"python": sys.version.split()[0], "argv": argv or sys.argv[1:]}))
    if "train" in sections:
        run_training(names, [int(t) for t in args.tiles.split(",")], args.steps, args.threads, args.naive_limit_gb)
    if "decode" in sections:
        run_decoding(names, args.threads)
    if "distinct" in sections:
        run_distinct(names, args.threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
