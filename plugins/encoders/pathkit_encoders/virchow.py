"""Virchow v1 (Paige): row "virchow" of `pathkit_encoders.table`, registered as its own plugin."""

from pathkit_encoders._vit import encoder_class, registrar
from pathkit_encoders.table import ROWS

VirchowEncoder = encoder_class(ROWS["virchow"], __name__, "VirchowEncoder")
register_encoders = registrar(VirchowEncoder)
