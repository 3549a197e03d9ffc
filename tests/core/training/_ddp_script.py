"""Run by test_trainer_protocol under torchrun: two gloo processes train TinyRegressor with `fit`."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

from _tiny_task import TinyRegressor, make_items  # noqa: E402

from pathkit_core.training.trainer import TrainConfig, fit, make_accelerator, predict, seed_everything  # noqa: E402


def main(out: Path) -> None:
    torch.set_num_threads(1)
    cfg = TrainConfig(max_epochs=2, lr=1e-2, batch_size=2, eval_batch_size=3, progress=False,
                      early_stop_patience=None, cpu=True)
    accelerator = make_accelerator(cfg)
    seed_everything(0)
    model = TinyRegressor()
    val = make_items(7, 2)
    scored: list[list[str]] = []

    def selection(preds, refs):
        scored.append(sorted(preds))
        return -sum((preds[k] - refs[k]) ** 2 for k in refs)

    per_epoch: list[list[str]] = []

    def on_epoch(record):
        per_epoch.append(sorted(model.trained_on))
        model.trained_on.clear()

    fit(model, make_items(16, 1), val, cfg, out / "ckpt", selection=selection, accelerator=accelerator,
        on_epoch=on_epoch)
    preds = predict(model, val, batch_size=2, accelerator=accelerator, out_path=out / "predictions.jsonl")
    weights = b"".join(v.detach().contiguous().numpy().tobytes() for v in model.state_dict().values())
    record = {"world": accelerator.num_processes, "type": str(accelerator.distributed_type),
              "digest": hashlib.sha256(weights).hexdigest(), "trained_on": per_epoch,
              "validated": scored[-1], "predicted": sorted(preds)}
    (out / f"rank{accelerator.process_index}.json").write_text(json.dumps(record))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
