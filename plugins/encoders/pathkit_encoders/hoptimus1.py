"""H-optimus-1 (Bioptimus): row "hoptimus1" of `pathkit_encoders.table`, registered as its own plugin."""

from pathkit_encoders._vit import encoder_class, registrar
from pathkit_encoders.table import ROWS

HOptimus1Encoder = encoder_class(ROWS["hoptimus1"], __name__, "HOptimus1Encoder")
register_encoders = registrar(HOptimus1Encoder)
