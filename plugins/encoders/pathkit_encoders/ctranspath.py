"""CTransPath: row "ctranspath" of `pathkit_encoders.table`, registered as one plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

CTransPathEncoder = encoder_class(ROWS["ctranspath"], __name__, "CTransPathEncoder")
register_encoders = registrar(CTransPathEncoder)
