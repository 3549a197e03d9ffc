"""TITAN, PRISM and Prov-GigaPath's slide encoder (issue 40): published sizes on the meta device, the
2D-ALiBi grid and the LongNet dilated attention against hand computation, random-weight forwards
of tiny members of each family, checkpoints, and the patch-encoder check before anything runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from _slide_encoders import check_published, slide_encoder

from pathkit_core.contracts import PathkitError

pytest.importorskip("pathkit_encoders")

from pathkit_encoders._longnet import DilatedAttention, sincos_2d  # noqa: E402
from pathkit_encoders._titan import alibi_bias, alibi_slopes, feature_grid  # noqa: E402
from pathkit_encoders.slide_store import embed_slides, read_slide_embedding  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TINY = {
    "titan": dict(in_dim=16, embed_dim=24, depth=2, num_heads=6, pool_queries=4, pool_heads=2),
    "gigapath-slide": dict(in_dim=16, embed_dim=32, depth=2, num_heads=4, ffn_dim=64, segments=(4, 8, 16),
                           dilations=(1, 2, 4)),
    "prism": dict(in_dim=12, latent_dim=16, latent_seq=3, mhsa_heads=2, perceiver_depth=4, transformer_depth=2),
}


@pytest.mark.parametrize("name", sorted(TINY))
def test_published_architecture_and_size(name):
    check_published(name)


def test_alibi_slopes_and_bias_by_hand():
    assert alibi_slopes(8) == [2.0 ** -(i + 1) for i in range(8)]
    twelve = [2.0 ** -(i + 1) for i in range(8)] + [2.0 ** -0.5, 2.0 ** -1.5, 2.0 ** -2.5, 2.0 ** -3.5]
    np.testing.assert_allclose(alibi_slopes(12), twelve, rtol=1e-12)
    cells = torch.tensor([[0, 0], [0, 1], [2, 1]])
    bias = alibi_bias(cells, 2)
    assert bias.shape == (1, 2, 4, 4) and torch.all(bias[0, :, 0] == 0) and torch.all(bias[0, :, :, 0] == 0)
    # head 1 (slope 1/16 for 2 heads: 2^(-8/2) squared), cells (0,0) and (2,1): distance sqrt(5)
    assert math.isclose(float(bias[0, 1, 1, 3]), -(2.0 ** -8) * math.sqrt(5), rel_tol=1e-6)
    assert math.isclose(float(bias[0, 0, 2, 3]), -(2.0 ** -4) * 2.0, rel_tol=1e-6)


def test_titan_grid_sums_a_cell_drops_background_and_reads_the_tile_step():
    feats = torch.tensor([[1.0, 0], [2, 0], [0, 3], [0, 0]])
    coords = torch.tensor([[1000, 2000], [1100, 2050], [2024, 3024], [3048, 2000]])  # 1024-px tiles at 40x
    tokens, cells = feature_grid(feats, coords, 1024.0)
    # rows floor((x - 1000) / 1024), cols floor((y - 2000) / 1024); the all-zero tile is background
    assert cells.tolist() == [[0, 0], [1, 1]] and tokens.tolist() == [[3.0, 0], [0, 3]]
    same, same_cells = feature_grid(feats, coords, None)  # the step inferred: the smallest gap, 50 px
    assert same_cells.tolist() != cells.tolist()  # a wrong step is visible: the file's record is used first


def test_titan_embedding_is_invariant_to_tile_order_and_translation_and_sees_geometry():
    enc = slide_encoder("titan", **TINY["titan"])
    model = enc.load()
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.normal(size=(12, 16)).astype(np.float32))
    coords = torch.tensor([[(i % 4) * 512, (i // 4) * 512] for i in range(12)])
    base = enc.embed(model, x, coords, 512.0)
    perm = torch.from_numpy(rng.permutation(12))
    torch.testing.assert_close(enc.embed(model, x[perm], coords[perm], 512.0), base, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(enc.embed(model, x, coords + 7 * 512, 512.0), base, rtol=1e-5, atol=1e-6)
    spread = coords.clone()
    spread[0] = torch.tensor([20 * 512, 20 * 512])  # one tile far away: ALiBi changes the attention
    assert not torch.allclose(enc.embed(model, x, spread, 512.0), base, atol=1e-4)
    assert base.shape == (24,) and torch.isfinite(base).all()


def test_titan_checkpoint_loads_its_vision_part_strictly(tmp_path):
    from safetensors.torch import save_file

    source_enc = slide_encoder("titan", **TINY["titan"])
    source = source_enc.load()
    state = {f"vision_encoder.{k}": v.contiguous() for k, v in source.state_dict().items()}
    state["text_encoder.token_embedding.weight"] = torch.zeros(3, 4)  # the text tower is dropped
    path = tmp_path / "model.safetensors"
    save_file(state, str(path))
    enc = slide_encoder("titan", **TINY["titan"])
    loaded = enc.load(weights_path=path)
    x, coords = torch.randn(5, 16), torch.tensor([[0, 0], [512, 0], [0, 512], [512, 512], [1024, 0]])
    assert torch.equal(enc.embed(loaded, x, coords, 512.0), source_enc.embed(source, x, coords, 512.0))


def _mae_sincos(row, col, dim):
    """MAE's get_2d_sincos_pos_embed row (row * grid + col), written from its formula."""
    def one(pos, d):
        omega = 1.0 / 10000 ** (np.arange(d // 2, dtype=np.float64) / (d / 2.0))
        out = pos * omega
        return np.concatenate([np.sin(out), np.cos(out)])
    return np.concatenate([one(col, dim // 2), one(row, dim // 2)])


def test_gigapath_positions_are_maes_sincos_of_the_256_px_cell():
    got = sincos_2d(torch.tensor([3, 0]), torch.tensor([17, 999]), 32).numpy()
    np.testing.assert_allclose(got[0], _mae_sincos(3, 17, 32), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got[1], _mae_sincos(0, 999, 32), rtol=1e-6, atol=1e-7)
    model = slide_encoder("gigapath-slide", **TINY["gigapath-slide"]).build()
    pos = model.positions(torch.tensor([[3 * 256 + 10.0, 17 * 256 + 255.0]]))
    np.testing.assert_allclose(pos[0].numpy(), _mae_sincos(3, 17, 32), rtol=1e-6, atol=1e-7)
    with pytest.raises(PathkitError, match="1000 x 1000 grid"):
        model.positions(torch.tensor([[1000 * 256.0, 0.0]]))


def _dilated_by_hand(q, k, v, segments, dilations):
    """Attention of every query over the multiset union of what each (segment, dilation) branch
    gives its head: the keys of its segment at its head group's residue, plus the zero keys that
    pad the segment (score 0, value 0)."""
    length, heads, d = q.shape
    out = np.zeros_like(q)
    for p in range(length):
        for h in range(heads):
            scores, values = [], []
            for seg, r in zip(segments, dilations, strict=True):
                seg = min(seg, length)
                group = h // (heads // r)
                start = (p // seg) * seg
                if (p - start) % r != group:
                    continue
                padded = -(-seg // r) * r
                for j in range(start + group, start + padded, r):
                    if j < length and j < start + seg:
                        scores.append(q[p, h] @ k[j, h] / math.sqrt(d))
                        values.append(v[j, h])
                    else:
                        scores.append(0.0)
                        values.append(np.zeros(d))
            w = np.exp(np.array(scores) - max(scores))
            out[p, h] = (w[:, None] * np.array(values)).sum(0) / w.sum()
    return out


def test_dilated_attention_matches_the_union_of_its_branches_by_hand():
    torch.manual_seed(0)
    attn = DilatedAttention(16, 4, segments=(4, 8, 16), dilations=(1, 2, 4))
    x = torch.randn(1, 11, 16)
    with torch.no_grad():
        q, k, v = (p(x)[0].reshape(11, 4, 4).double().numpy() for p in (attn.q_proj, attn.k_proj, attn.v_proj))
        mixed = torch.from_numpy(_dilated_by_hand(q, k, v, (4, 8, 16), (1, 2, 4))).float().reshape(1, 11, 16)
        want = attn.out_proj(attn.inner_attn_ln(mixed))
        torch.testing.assert_close(attn(x), want, rtol=1e-4, atol=1e-5)


def test_gigapath_slide_forward_and_checkpoint(tmp_path):
    enc = slide_encoder("gigapath-slide", **TINY["gigapath-slide"])
    source = enc.load()
    path = tmp_path / "slide_encoder.pth"
    torch.save({"model": source.state_dict()}, path)  # the release's payload layout
    loaded_enc = slide_encoder("gigapath-slide", **TINY["gigapath-slide"])
    loaded = loaded_enc.load(weights_path=path)
    x, coords = torch.randn(21, 16), torch.randint(0, 5000, (21, 2)).float()
    out = loaded_enc.embed(loaded, x, coords)
    assert out.shape == (32,) and torch.equal(out, enc.embed(source, x, coords))


def _features(folder, slide_id, encoder, dim, tile_px, mpp, level0=None):
    from pathkit_core.features.store import write_features

    rng = np.random.default_rng(0)
    meta = {"slide_id": slide_id, "encoder": encoder, "tile_px": tile_px, "target_mpp": mpp}
    if level0:
        meta["tile_px_level0"] = level0
    coords = np.array([[(i % 3) * (level0 or tile_px), (i // 3) * (level0 or tile_px)] for i in range(6)])
    return write_features(folder / f"{slide_id}.safetensors", rng.normal(size=(6, dim)).astype(np.float32),
                          coords, meta)


def test_titan_over_uni_features_is_refused_with_the_reason(tmp_path):
    titan = slide_encoder("titan")
    problem = titan.feature_problem("uni", 1024, 256, 0.5)
    assert "reads 'conch15' patch features, not 'uni'" in problem and "--encoder conch15" in problem
    assert "512 px tiles at 0.5 mpp (20x)" in titan.feature_problem("conch15", 768, 256, 0.5)
    uni = _features(tmp_path, "u", "uni", 1024, 256, 0.5)
    with pytest.raises(PathkitError, match=r"u\.safetensors: slide encoder 'titan' reads 'conch15'"):
        embed_slides(titan, [uni], tmp_path / "store")
    assert not (tmp_path / "store").exists()
    gp = slide_encoder("gigapath-slide")
    assert "reads 'gigapath' patch features" in gp.feature_problem("conch15", 768, 512, 0.5)


def test_titan_reads_the_feature_files_level0_tile_size(tmp_path):
    small = slide_encoder("titan", **{**TINY["titan"], "in_dim": 768})
    path = _features(tmp_path, "c", "conch15", 768, 512, 0.5, level0=1024)  # a 40x slide
    (result,) = embed_slides(small, [path], tmp_path / "store")
    from pathkit_core.features.store import read_features

    record = read_features(path)
    model = small.load()
    want = small.embed(model, record.features, record.coords, 1024.0)
    torch.testing.assert_close(read_slide_embedding(result.path), want)


def _attend(q, k, v, heads):
    b, n, d = q.shape
    q, k, v = (t.reshape(b, -1, heads, d // heads).transpose(1, 2) for t in (q, k, v))
    w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // heads), dim=-1)
    return (w @ v).transpose(1, 2).reshape(b, n, d)


def test_prism_shares_its_layers_and_its_embedding_is_the_first_latent_by_hand():
    enc = slide_encoder("prism", **TINY["prism"])
    model = enc.load()
    layers = model.perceiver.layers
    assert layers[0]["xattn"] is not layers[1]["xattn"] and all(layers[i]["xattn"] is layers[1]["xattn"]
                                                                  for i in (2, 3))
    assert all(layers[i]["tf"] is layers[0]["tf"] for i in (1, 2, 3))
    tiles = torch.randn(1, 9, 12)
    x = model.perceiver.latents.detach().unsqueeze(0)
    with torch.no_grad():
        for layer in layers:
            xa = layer["xattn"]["xattn"]
            k, v = xa.to_kv(tiles).chunk(2, dim=-1)
            x = x + xa.to_out(_attend(xa.to_q(xa.x_norm(x)), k, v, 1))
            x = x + layer["xattn"]["ff"](x)
            for block in layer["tf"]:
                h = block["mhsa"].norm(x)
                wq, wk, wv = block["mhsa"].mha.in_proj_weight.chunk(3)
                x = x + _attend(h @ wq.T, h @ wk.T, h @ wv.T, 2) @ block["mhsa"].mha.out_proj.weight.T
                x = x + block["ff"](x)
        want = model.cls_norm(x[:, 0])[0]
    torch.testing.assert_close(enc.embed(model, tiles[0], None), want, rtol=1e-5, atol=1e-6)


def test_prism_checkpoint_with_shared_tensors_stored_once_loads(tmp_path):
    from safetensors.torch import save_file

    source_enc = slide_encoder("prism", **TINY["prism"])
    source = source_enc.load()
    state, seen = {}, set()
    for name, tensor in source.state_dict().items():  # a shared tensor under its first name only
        if tensor.data_ptr() not in seen:
            seen.add(tensor.data_ptr())
            state[name] = tensor
    assert not any(k.startswith("perceiver.layers.2.") for k in state)
    payload = {f"image_resampler.{k}": v.contiguous() for k, v in state.items()}
    payload["text_decoder.lm_head.weight"] = torch.zeros(2, 2)
    path = tmp_path / "model.safetensors"
    save_file(payload, str(path))
    enc = slide_encoder("prism", **TINY["prism"])
    loaded = enc.load(weights_path=path)
    tiles = torch.randn(6, 12)
    assert torch.equal(enc.embed(loaded, tiles, None), source_enc.embed(source, tiles, None))
    assert "reads 'virchow' patch features" in slide_encoder("prism").feature_problem("virchow2", 2560, 224, 0.5)
