"""Virchow2 (Paige): row "virchow2" of `pathkit_encoders.table`, registered as its own plugin."""

from pathkit_encoders._vit import encoder_class, registrar
from pathkit_encoders.table import ROWS

Virchow2Encoder = encoder_class(ROWS["virchow2"], __name__, "Virchow2Encoder")
register_encoders = registrar(Virchow2Encoder)
