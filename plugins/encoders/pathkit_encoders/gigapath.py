"""Prov-GigaPath tile encoder: row "gigapath" of `pathkit_encoders.table`, registered as its own plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

GigaPathEncoder = encoder_class(ROWS["gigapath"], __name__, "GigaPathEncoder")
register_encoders = registrar(GigaPathEncoder)
