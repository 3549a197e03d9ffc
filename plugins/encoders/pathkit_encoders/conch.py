"""CONCH v1 (Mahmood Lab) into the image-text space: row "conch" of `pathkit_encoders.table`, registered
as its own plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

ConchEncoder = encoder_class(ROWS["conch"], __name__, "ConchEncoder")
register_encoders = registrar(ConchEncoder)
