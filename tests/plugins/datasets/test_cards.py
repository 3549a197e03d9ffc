"""data/cards.toml: every card is a registered dataset's, each of its keys is an attribute the
dataset contract, the dataset's base or the dataset class declares (so that a misspelt key cannot
go unnoticed), and the options a card lists are among its dataset's options."""

from pathkit_datasets._cards import card_options, cards


def test_every_card_names_a_dataset_and_declared_attributes(installed_registry):
    assert cards(), "data/cards.toml is empty"
    for name, card in cards().items():
        cls = installed_registry.get("dataset", name)
        assert cls.name == name
        for key, value in card.items():
            if key == "options":
                continue
            declared = [base for base in cls.__mro__ if key in vars(base).get("__annotations__", {})]
            assert declared, f"card {name!r}: {key!r} is no attribute its dataset declares"
            assert getattr(cls, key) == value
        listed = card_options(name)
        assert [o for o in cls.option_table if o in listed] == list(listed), name


def test_card_options_keep_their_types_and_defaults():
    from pathkit_datasets.goldmark import OPTIONS, SPLIT_PROTOCOLS

    from pathkit_sdk.cohort import option

    assert option("split_protocol", OPTIONS).type == "|".join(SPLIT_PROTOCOLS)
    assert option("fold", OPTIONS).default == 1 and option("task", OPTIONS).default is None
    assert option("min_tissue_mm2", OPTIONS).default == 25.0 and option("dedupe", OPTIONS).default is True
