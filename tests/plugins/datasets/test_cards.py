"""data/cards.toml: every card is a registered dataset's, and each of its keys is an attribute the
dataset contract, the dataset's base or the dataset class declares, so that a misspelt key cannot go
unnoticed."""

from pathkit_datasets._cards import cards


def test_every_card_names_a_dataset_and_declared_attributes(installed_registry):
    assert cards(), "data/cards.toml is empty"
    for name, card in cards().items():
        cls = installed_registry.get("dataset", name)
        assert cls.name == name
        for key, value in card.items():
            declared = [base for base in cls.__mro__ if key in vars(base).get("__annotations__", {})]
            assert declared, f"card {name!r}: {key!r} is no attribute its dataset declares"
            assert getattr(cls, key) == value
