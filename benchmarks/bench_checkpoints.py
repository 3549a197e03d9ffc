"""Size of the `last` checkpoint of `wsi-caption` at the PathBench protocol, by what it holds.

The model is the generator's default (d_model 512, 3 + 3 layers) with a vocabulary built from the
real REG 2025 train reports (`$PATHKIT_REALDATA/reports/reg2025_pathbench_splits.json`, default
`../shared/data`) over 1536-dim tile features (H-optimus-1's width). One AdamW step fills the
optimizer state; then, side by side:

- a mid-training `last` (weights, AdamW moments, scheduler, RNG: what an exact resume needs);
- the final `last` (weights and trainer state: training is over, nothing is resumed);
- the weights alone, by module group, to show where the bytes are.

    .venv/bin/python benchmarks/bench_checkpoints.py
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def main() -> None:
    import torch
    from pathkit_generators._text.beam import BeamSearchConfig
    from pathkit_generators._text.tokenizer import ReportTokenizer
    from pathkit_generators._wsi_caption_net import WSICaptionModel
    from pathkit_generators.wsi_caption import WSICaption

    from pathkit_core.training.trainer import save_checkpoint

    data = Path(os.environ.get("PATHKIT_REALDATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    splits = json.loads((data / "reports" / "reg2025_pathbench_splits.json").read_text())
    tokenizer = ReportTokenizer.build([r["report"] for r in splits["train"]])
    hp = WSICaption.default_hparams
    model = WSICaptionModel(tokenizer, BeamSearchConfig(), feature_dim=1536, d_model=hp["d_model"], d_ff=hp["d_ff"],
                            num_heads=hp["num_heads"], num_layers=hp["num_layers"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()
    n_params = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    groups: dict[str, int] = {}
    for name, t in model.state_dict().items():
        parts = name.split(".")
        group = ".".join(parts[:2]) if parts[0] == "decoder" else parts[0]
        groups[group] = groups.get(group, 0) + t.numel() * t.element_size()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        mid = save_checkpoint(d, "mid", model, config={}, optimizer=optimizer, trainer_state={"epoch": 1})
        final = save_checkpoint(d, "final", model, config={}, trainer_state={"epoch": 1, "final": True})
        mid_mb, final_mb = mid.stat().st_size / 1e6, final.stat().st_size / 1e6
    print(f"vocabulary {tokenizer.vocab_size} tokens; {n_params:,} parameters, {trainable:,} trainable "
          f"(frozen: {n_params - trainable:,})")
    print("weights by module (MB): " + ", ".join(f"{k} {v / 1e6:.1f}" for k, v in sorted(groups.items(),
                                                                                          key=lambda kv: -kv[1])))
    print(f"mid-training last (weights + AdamW moments + RNG): {mid_mb:.1f} MB")
    print(f"final last (weights + trainer state):               {final_mb:.1f} MB ({final_mb / mid_mb:.2f}x)")


if __name__ == "__main__":
    main()
