"""Virchow v1 (Paige): row "virchow" of `pathkit_encoders.table`, registered as its own plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

VirchowEncoder = encoder_class(ROWS["virchow"], __name__, "VirchowEncoder")
register_encoders = registrar(VirchowEncoder)
