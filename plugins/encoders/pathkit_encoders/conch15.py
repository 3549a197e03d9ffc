"""CONCH v1.5 (Mahmood Lab) vision encoder: row "conch15" of `pathkit_encoders.table`, registered as its own plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

Conch15Encoder = encoder_class(ROWS["conch15"], __name__, "Conch15Encoder")
register_encoders = registrar(Conch15Encoder)
