"""PLIP and QuiltNet, CLIP ViT-B/32 image towers: rows "plip", "quilt" of `pathkit_encoders.table`, registered as
one plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

PlipEncoder = encoder_class(ROWS["plip"], __name__, "PlipEncoder")
QuiltEncoder = encoder_class(ROWS["quilt"], __name__, "QuiltEncoder")
register_encoders = registrar(PlipEncoder, QuiltEncoder)
