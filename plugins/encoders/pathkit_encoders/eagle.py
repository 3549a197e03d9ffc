"""EAGLE (MSK), Prov-GigaPath fine-tuned for LUAD EGFR: row "eagle" of `pathkit_encoders.table`,
registered as its own plugin."""

from pathkit_encoders._vit import encoder_class, registrar
from pathkit_encoders.table import ROWS

EagleEncoder = encoder_class(ROWS["eagle"], __name__, "EagleEncoder")
register_encoders = registrar(EagleEncoder)
