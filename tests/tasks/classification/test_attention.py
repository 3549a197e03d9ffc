"""Attention export: rows aligned with the tile manifest, coordinate cross-checks, heatmaps over thumbnails."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from PIL import Image

from pathkit_core.contracts import PathkitError
from pathkit_tasks.classification.attention import (
    attention_table,
    read_tile_table,
    render_heatmap,
    slide_id_of,
    write_attention,
)


def test_slide_ids_of_feature_files():
    # TCGA slide ids keep their UUID suffix after the dot
    assert slide_id_of("x/TCGA-AA-1234-01Z-00-DX1.ABC.safetensors") == "TCGA-AA-1234-01Z-00-DX1.ABC"
    assert slide_id_of("P-0001-T01.pt") == "P-0001-T01"
    assert slide_id_of("S1.FAILED_degenerate.pt") == "S1"
    # a prefixed release's slide ids come from the case (GOLDMARK's cases state them), not the name
    assert slide_id_of("features_P-0001-T01.pt") == "features_P-0001-T01"


def test_table_is_aligned_with_a_goldmark_csv_manifest(tmp_path):
    csv = tmp_path / "S1.csv"
    csv.write_text("tile_id,x,y,level\n0,0,0,0\n1,256,0,0\n2,0,256,0\n3,256,256,0\n")
    tiles, meta = read_tile_table(csv)
    assert tiles.columns == ["tile_index", "x", "y"] and meta == {}
    # attention over a sampled bag: tiles 3, 0, 2 (in bag order)
    table = attention_table("S1", [3, 0, 2], [0.5, 0.2, 0.3], [2.0, 0.1, 0.9], tiles=tiles)
    assert table["tile_index"].to_list() == [0, 2, 3]
    assert table.select("x", "y").rows() == [(0, 0), (0, 256), (256, 256)]
    assert table["attention_rank"].to_list() == [3, 2, 1]
    assert table["attention_percentile"].to_list() == [0.0, 0.5, 1.0]
    parquet, csv_out = write_attention(table, tmp_path / "out", "S1")
    assert pl.read_parquet(parquet).equals(table) and pl.read_csv(csv_out).height == 3


def test_disagreeing_coordinates_or_unknown_tiles_are_refused(tmp_path):
    tiles = pl.DataFrame({"tile_index": [0, 1], "x": [0, 256], "y": [0, 0]})
    with pytest.raises(PathkitError, match="tile 1 is at \\(512, 0\\) in the feature file but at \\(256, 0\\)"):
        attention_table("S", [0, 1], [0.5, 0.5], coords=np.array([[0, 0], [512, 0]]), tiles=tiles)
    with pytest.raises(PathkitError, match="tile 7 is not in the tile manifest"):
        attention_table("S", [0, 7], [0.5, 0.5], tiles=tiles)
    with pytest.raises(PathkitError, match="differ in length"):
        attention_table("S", [0, 1], [1.0])
    no_coords = attention_table("S", [0, 1], [0.4, 0.6])
    assert no_coords["x"].null_count() == 2
    with pytest.raises(PathkitError, match="no tile coordinates"):
        render_heatmap(no_coords, tmp_path / "h.png")
    (tmp_path / "bad.csv").write_text("tile_id,col\n0,1\n")
    with pytest.raises(PathkitError, match="lacks column\\(s\\) x, y"):
        read_tile_table(tmp_path / "bad.csv")


def test_heatmap_is_drawn_over_the_thumbnail_at_its_scale(tmp_path):
    thumb = tmp_path / "S.qc.png"
    Image.new("RGB", (64, 32), (255, 255, 255)).save(thumb)
    # level-0 slide 1024 x 512 drawn at downsample 16: tile (0,0) of 256 px covers thumbnail [0:16, 0:16]
    table = attention_table("S", [0, 1], [0.9, 0.1], coords=np.array([[0, 0], [512, 256]]))
    png = render_heatmap(table, tmp_path / "S.heatmap.png", thumbnail=thumb, downsample=(16.0, 16.0),
                         tile_size0=256, alpha=1.0)
    img = np.asarray(Image.open(png))
    assert img.shape == (32, 64, 3)
    hot, cold, untouched = img[8, 8], img[24, 40], img[8, 40]
    assert hot[0] > hot[2] and cold[2] > cold[0]  # most attended red, least attended blue
    assert untouched.tolist() == [255, 255, 255]
    blank = render_heatmap(table, tmp_path / "blank.png", tile_size0=256)
    assert Image.open(blank).size == (24, 16)  # 8 canvas pixels per tile without a thumbnail
