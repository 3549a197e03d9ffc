"""Lunit DINO ViT-S/8: row "lunit-vits8" of `pathkit_encoders.table`, registered as one plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

LunitViTS8Encoder = encoder_class(ROWS["lunit-vits8"], __name__, "LunitViTS8Encoder")
register_encoders = registrar(LunitViTS8Encoder)
