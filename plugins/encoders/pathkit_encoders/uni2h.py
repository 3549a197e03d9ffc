"""UNI2-h (Mahmood Lab): row "uni2h" of `pathkit_encoders.table`, registered as its own plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

Uni2hEncoder = encoder_class(ROWS["uni2h"], __name__, "Uni2hEncoder")
register_encoders = registrar(Uni2hEncoder)
