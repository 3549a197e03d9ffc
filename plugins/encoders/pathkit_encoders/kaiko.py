"""Kaiko.ai's ViT-S/16, ViT-S/8, ViT-B/16, ViT-B/8 and ViT-L/14: rows "kaiko-vits16", "kaiko-vits8", "kaiko-
vitb16", "kaiko-vitb8", "kaiko-vitl14" of `pathkit_encoders.table`, registered as one plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

KaikoViTS16Encoder = encoder_class(ROWS["kaiko-vits16"], __name__, "KaikoViTS16Encoder")
KaikoViTS8Encoder = encoder_class(ROWS["kaiko-vits8"], __name__, "KaikoViTS8Encoder")
KaikoViTB16Encoder = encoder_class(ROWS["kaiko-vitb16"], __name__, "KaikoViTB16Encoder")
KaikoViTB8Encoder = encoder_class(ROWS["kaiko-vitb8"], __name__, "KaikoViTB8Encoder")
KaikoViTL14Encoder = encoder_class(ROWS["kaiko-vitl14"], __name__, "KaikoViTL14Encoder")
register_encoders = registrar(KaikoViTS16Encoder, KaikoViTS8Encoder, KaikoViTB16Encoder, KaikoViTB8Encoder,
                              KaikoViTL14Encoder)
