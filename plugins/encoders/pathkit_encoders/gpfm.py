"""GPFM (HKUST): row "gpfm" of `pathkit_encoders.table`, registered as one plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

GpfmEncoder = encoder_class(ROWS["gpfm"], __name__, "GpfmEncoder")
register_encoders = registrar(GpfmEncoder)
