"""Phikon and Phikon-v2 (Owkin): rows "phikon", "phikon-v2" of `pathkit_encoders.table`, registered as one
plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

PhikonEncoder = encoder_class(ROWS["phikon"], __name__, "PhikonEncoder")
PhikonV2Encoder = encoder_class(ROWS["phikon-v2"], __name__, "PhikonV2Encoder")
register_encoders = registrar(PhikonEncoder, PhikonV2Encoder)
