"""H-optimus-1 (Bioptimus): row "hoptimus1" of `pathkit_encoders.table`, registered as its own plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

HOptimus1Encoder = encoder_class(ROWS["hoptimus1"], __name__, "HOptimus1Encoder")
register_encoders = registrar(HOptimus1Encoder)
