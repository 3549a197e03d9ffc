"""tiny-vit and tiny-vit-wide, NOT pathology models (tests, demo): rows "tiny-vit" and
"tiny-vit-wide" of `pathkit_encoders.table`, registered as one plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

TinyViTEncoder = encoder_class(ROWS["tiny-vit"], __name__, "TinyViTEncoder")
TinyViTWideEncoder = encoder_class(ROWS["tiny-vit-wide"], __name__, "TinyViTWideEncoder")
register_encoders = registrar(TinyViTEncoder, TinyViTWideEncoder)
