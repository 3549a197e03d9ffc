"""UNI2-h (Mahmood Lab): row "uni2h" of `pathkit_encoders.table`, registered as its own plugin."""

from pathkit_encoders._vit import encoder_class, registrar
from pathkit_encoders.table import ROWS

Uni2hEncoder = encoder_class(ROWS["uni2h"], __name__, "Uni2hEncoder")
register_encoders = registrar(Uni2hEncoder)
