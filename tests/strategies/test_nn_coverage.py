"""Every public torch.nn layer of the installed torch is in the layer catalogue
(ortcheck/strategies/nn_layers) or excluded with a reason (nn_layers/coverage.py): a torch that adds a
layer fails here until it is covered. Also in ort119 (torch 2.4.1)."""
import functools

import pytest

from ortcheck.strategies.nn_layers import LAYERS
from ortcheck.strategies.nn_layers.coverage import EXCLUDED, built_classes, first_example, lazy_twins, public_layers


@functools.cache
def covered() -> dict[type, list[str]]:
    """Class -> the catalogue ids that build it."""
    found: dict[type, list[str]] = {}
    for name, strategy in LAYERS.items():
        for cls in built_classes(first_example(strategy)):
            found.setdefault(cls, []).append(name)
    return found


def test_every_torch_nn_layer_is_in_the_catalogue_or_excluded_with_a_reason():
    layers = public_layers()
    excluded = {**EXCLUDED, **dict(lazy_twins(layers, set(covered())))}
    missing = sorted(name for name, cls in layers.items() if cls not in covered() and name not in excluded)
    assert not missing, f"torch.nn layers neither in the catalogue nor excluded: {missing}"
    both = sorted(name for name, cls in layers.items() if cls in covered() and name in EXCLUDED)
    assert not both, f"excluded yet in the catalogue: {both}"


@pytest.mark.parametrize("name", sorted(EXCLUDED))
def test_each_exclusion_says_why(name):
    assert len(EXCLUDED[name].split()) >= 4, f"{name}: a reason, not a label"


def test_every_catalogue_id_named_after_a_layer_builds_that_layer():
    """``Conv2d_same`` builds nn.Conv2d: an id never names a layer its examples do not construct."""
    layers = public_layers()
    for name in LAYERS:
        named = layers.get(name.split("_")[0])
        if named is not None:
            assert name in covered().get(named, []), f"{name} builds {sorted(c.__name__ for c in built_classes(first_example(LAYERS[name])))}"


def test_the_catalogue_covers_most_of_torch_nn():
    """A floor, so a bulk exclusion shows: 140 layer classes in torch 2.13, containers and lazies apart."""
    layers = public_layers()
    assert sum(cls in covered() for cls in layers.values()) >= 0.8 * (len(layers) - len(EXCLUDED) - sum(
        name.startswith("Lazy") for name in layers))
