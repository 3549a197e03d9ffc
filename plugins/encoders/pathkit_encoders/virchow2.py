"""Virchow2 (Paige): row "virchow2" of `pathkit_encoders.table`, registered as its own plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

Virchow2Encoder = encoder_class(ROWS["virchow2"], __name__, "Virchow2Encoder")
register_encoders = registrar(Virchow2Encoder)
