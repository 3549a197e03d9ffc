"""UNI v1 (Mahmood Lab): row "uni" of `pathkit_encoders.table`, registered as its own plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

UniEncoder = encoder_class(ROWS["uni"], __name__, "UniEncoder")
register_encoders = registrar(UniEncoder)
