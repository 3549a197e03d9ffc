"""pathkit's tile encoders: rows of `pathkit_encoders.table` over the builder of `_vit.py`.

The names a plugin needs to write and register an encoder row of its own (docs/encoders.md,
"Adding an encoder"); importing them imports neither torch nor timm.
"""

from pathkit_encoders._vit import ViTTileEncoder, encoder_class, registrar
from pathkit_encoders.table import ROWS, EncoderSpec

__all__ = ["ROWS", "EncoderSpec", "ViTTileEncoder", "encoder_class", "registrar"]
