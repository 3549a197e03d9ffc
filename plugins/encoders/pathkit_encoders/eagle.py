"""EAGLE (MSK), Prov-GigaPath fine-tuned for LUAD EGFR: row "eagle" of `pathkit_encoders.table`,
registered as its own plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

EagleEncoder = encoder_class(ROWS["eagle"], __name__, "EagleEncoder")
register_encoders = registrar(EagleEncoder)
