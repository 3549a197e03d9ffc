"""pcam: PatchCamelyon, lymph-node metastasis in 96 px patches (Veeling et al. 2018).

Read as Zenodo record 2546921 distributes it, gunzipped: `camelyonpatch_level_2_split_{train,
valid,test}_{x,y}.h5`; each x file holds `x` (N, 96, 96, 3) uint8, each y file `y` (N, 1, 1, 1)
with label 1 when the centre 32 x 32 px hold tumour. Images are read lazily from the h5 files
(no copy); the official parts are the files (262,144 / 32,768 / 32,768). The `_meta.csv` files
are not needed. docs/catalogue.md#pcam.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PathkitError
from pathkit_datasets._catalogue import Item, PublicPatchDataset

CLASSES = ("no_tumor", "tumor")
PARTS = {"train": "train", "valid": "val", "test": "test"}
X_SHAPE = (96, 96, 3)
Y_SHAPE = (1, 1, 1)


def h5_name(part: str, kind: str) -> str:
    return f"camelyonpatch_level_2_split_{part}_{kind}.h5"


def h5_ref(path: Path, key: str, index: int) -> str:
    """The image reference of row `index` of the (N, H, W, 3) uint8 array `key` of an HDF5 file
    (the form `pathkit_core.features.images.read_image` reads)."""
    from pathkit_core.features.images import ZIP_SEPARATOR

    return f"{path}{ZIP_SEPARATOR}{key}/{int(index)}"


def _array(path: Path, key: str, shape: tuple[int, ...], dataset: str):
    """The array `key` of `path` (opened lazily), checked against (N, *shape)."""
    import h5py
    import numpy as np

    if not path.is_file():
        packed = path.with_name(path.name + ".gz")
        hint = f"; {packed.name} is there: gunzip it" if packed.is_file() else "; is the download complete?"
        raise PathkitError(f"dataset {dataset!r}: {path} is missing{hint}")
    try:
        handle = h5py.File(path, "r")
    except OSError as exc:
        raise PathkitError(f"dataset {dataset!r}: {path} is not a readable HDF5 file ({exc})") from None
    if key not in handle:
        raise PathkitError(f"{path}: has no array {key!r} (has: {', '.join(handle.keys()) or 'nothing'})")
    array = handle[key]
    if tuple(array.shape[1:]) != shape or array.dtype != np.uint8:
        raise PathkitError(f"{path}: array {key!r} is {array.dtype} of shape {array.shape}; PatchCamelyon's is "
                           f"uint8 of shape (N, {', '.join(map(str, shape))})")
    return handle, array


class PcamDataset(PublicPatchDataset, card="pcam"):
    """The six PatchCamelyon h5 files (see the module docstring)."""

    classes: ClassVar[tuple[str, ...]] = CLASSES

    def items(self, root: Path) -> list[Item]:
        out = []
        for part, ours in PARTS.items():
            x_path, y_path = root / h5_name(part, "x"), root / h5_name(part, "y")
            x_file, x = _array(x_path, "x", X_SHAPE, self.name)
            y_file, y = _array(y_path, "y", Y_SHAPE, self.name)
            with x_file, y_file:
                if len(x) != len(y):
                    raise PathkitError(f"{x_path} holds {len(x)} images but {y_path.name} {len(y)} labels; one "
                                       "of them is damaged or from another release")
                labels = y[:].reshape(-1)
            bad = sorted(set(labels.tolist()) - {0, 1})
            if bad:
                raise PathkitError(f"{y_path}: labels {bad[:5]} are not 0 or 1")
            out.extend(Item(f"{part}-{i}", CLASSES[int(v)], h5_ref(x_path, "x", i), ours,
                            where=f"{x_path.name}[{i}]") for i, v in enumerate(labels))
        return out


@hookimpl
def register_datasets(register):
    register(PcamDataset)
