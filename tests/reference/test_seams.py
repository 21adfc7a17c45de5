"""The fault-injection seams (reference.seams): each holds the right behaviour unless overridden, and
an override ends with its block, error or not. What each seam breaks is shown by the control that
uses it (controls/, tests/harness/test_plugin.py); here only that the seams exist and restore."""
import importlib

import onnx
import pytest

from reference.autodiff import registry
from reference.seams import Seam

SEAMED = ("reference.autodiff.registry", "reference.recompute", "reference.recompute.plans",
          "reference.recompute.rewrite", "reference.nested_io.schema", "reference.module.wrapper")


def _seams():
    return {f"{name}.{attr}": value for name in SEAMED for attr, value in vars(importlib.import_module(name)).items()
            if isinstance(value, Seam)}


def test_every_seam_holds_its_default():
    seams = _seams()
    assert len(seams) == 7
    assert not [name for name, seam in seams.items() if seam.value is not seam.default]


def test_an_override_ends_with_its_block_even_on_error():
    seam = Seam("example", 0)
    with pytest.raises(RuntimeError):
        with seam.overridden(1):
            assert seam.value == 1
            raise RuntimeError
    assert seam.value == 0


def test_a_replaced_rule_serves_its_op_inside_the_block_only():
    node = onnx.helper.make_node("Where", ["c", "x", "y"], ["z"])
    original = registry.rule_for(node, "where", 17)
    replacement = lambda ctx, grad_node: {}
    with registry.rule_replaced("Where", replacement):
        assert registry.rule_for(node, "where", 17) is replacement
    assert registry.rule_for(node, "where", 17) is original
