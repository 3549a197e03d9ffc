"""Prov-GigaPath tile encoder: row "gigapath" of `pathkit_encoders.table`, registered as its own plugin."""

from pathkit_encoders._vit import encoder_class, registrar
from pathkit_encoders.table import ROWS

GigaPathEncoder = encoder_class(ROWS["gigapath"], __name__, "GigaPathEncoder")
register_encoders = registrar(GigaPathEncoder)
