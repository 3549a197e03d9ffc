"""CONCH v1 (Mahmood Lab) into the image-text space: row "conch" of `pathkit_encoders.table`, registered
as its own plugin."""

from pathkit_encoders._vit import encoder_class, registrar
from pathkit_encoders.table import ROWS

ConchEncoder = encoder_class(ROWS["conch"], __name__, "ConchEncoder")
register_encoders = registrar(ConchEncoder)
