"""H-optimus-0 (Bioptimus): row "hoptimus0" of `pathkit_encoders.table`, registered as its own plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

HOptimus0Encoder = encoder_class(ROWS["hoptimus0"], __name__, "HOptimus0Encoder")
register_encoders = registrar(HOptimus0Encoder)
