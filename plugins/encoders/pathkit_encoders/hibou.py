"""Hibou-B (HistAI): row "hibou-b" of `pathkit_encoders.table`, registered as its own plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

HibouBEncoder = encoder_class(ROWS["hibou-b"], __name__, "HibouBEncoder")
register_encoders = registrar(HibouBEncoder)
