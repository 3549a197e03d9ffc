"""The ImageNet ResNet-50 truncated after stage 3: row "resnet50-trunc" of `pathkit_encoders.table`, registered
as one plugin."""

from pathkit_encoders import ROWS, encoder_class, registrar

ResNet50TruncEncoder = encoder_class(ROWS["resnet50-trunc"], __name__, "ResNet50TruncEncoder")
register_encoders = registrar(ResNet50TruncEncoder)
