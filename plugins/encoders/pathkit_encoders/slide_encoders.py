"""The slide encoders (FEATHER, MADELEINE, CHIEF, TITAN, Prov-GigaPath's, PRISM) and the
`mean-<encoder>` baseline of every patch encoder of `pathkit_encoders.table`, registered as one
plugin (component kind `slide-encoder`)."""

from pathkit_encoders._slide import slide_encoder_class, slide_registrar
from pathkit_encoders.slide_table import SLIDE_ROWS, mean_row
from pathkit_encoders.table import ROWS


def _class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("-", " ").replace(".", " ").split()) + "SlideEncoder"


FeatherSlideEncoder = slide_encoder_class(SLIDE_ROWS["feather"], __name__, "FeatherSlideEncoder")
MadeleineSlideEncoder = slide_encoder_class(SLIDE_ROWS["madeleine"], __name__, "MadeleineSlideEncoder")
ChiefSlideEncoder = slide_encoder_class(SLIDE_ROWS["chief"], __name__, "ChiefSlideEncoder")
TitanSlideEncoder = slide_encoder_class(SLIDE_ROWS["titan"], __name__, "TitanSlideEncoder")
GigapathSlideEncoder = slide_encoder_class(SLIDE_ROWS["gigapath-slide"], __name__, "GigapathSlideEncoder")
PrismSlideEncoder = slide_encoder_class(SLIDE_ROWS["prism"], __name__, "PrismSlideEncoder")
TinyTitanSlideEncoder = slide_encoder_class(SLIDE_ROWS["tiny-titan"], __name__, "TinyTitanSlideEncoder")
# the slide encoders of the table, by name (the mean baselines are MEAN_ENCODERS)
NAMED = {cls.name: cls for cls in (FeatherSlideEncoder, MadeleineSlideEncoder, ChiefSlideEncoder, TitanSlideEncoder,
                                   GigapathSlideEncoder, PrismSlideEncoder, TinyTitanSlideEncoder)}
MEAN_ENCODERS = {}
for _name, _spec in ROWS.items():
    _cls = slide_encoder_class(mean_row(_name, _spec.embed_dim), __name__, _class_name(f"mean-{_name}"))
    globals()[_cls.__qualname__] = _cls  # importable by its name (pickling)
    MEAN_ENCODERS[_cls.name] = _cls

register_slide_encoders = slide_registrar(*NAMED.values(), *MEAN_ENCODERS.values())
