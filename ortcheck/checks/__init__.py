"""Reusable comparisons: the oracles suites assert with."""
from ortcheck.checks.structure import assert_same_structure, children, map_leaves, rebuild
from ortcheck.checks.tensors import assert_tensors_close

__all__ = ["assert_same_structure", "assert_tensors_close", "children", "map_leaves", "rebuild"]
