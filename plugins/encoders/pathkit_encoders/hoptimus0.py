"""H-optimus-0 (Bioptimus): row "hoptimus0" of `pathkit_encoders.table`, registered as its own plugin."""

from pathkit_encoders._vit import encoder_class, registrar
from pathkit_encoders.table import ROWS

HOptimus0Encoder = encoder_class(ROWS["hoptimus0"], __name__, "HOptimus0Encoder")
register_encoders = registrar(HOptimus0Encoder)
