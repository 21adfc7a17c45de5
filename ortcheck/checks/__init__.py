"""Reusable comparisons: the oracles suites assert with (docs/architecture.md, "Oracles")."""
from ortcheck.checks.bitwise import assert_bitwise_equal, ulp_distance
from ortcheck.checks.kept import KeptTensors, kept_tensors
from ortcheck.checks.oracle import (
    FACTOR, Verdict, assert_curve_matches_oracle, assert_matches_oracle, assert_tensor_matches_oracle, curve_verdicts,
    judge,
)
from ortcheck.checks.runs import (
    RUNS, float64_copy, fresh_leaves, input_runs, module_runs, nudged, nudged_module, to_float64,
)
from ortcheck.checks.stacks import assert_stack_matches_eager
from ortcheck.checks.structure import assert_same_structure
from ortcheck.checks.tensors import assert_tensors_close
from ortcheck.nested import children, map_leaves, rebuild

__all__ = ["FACTOR", "KeptTensors", "RUNS", "Verdict", "assert_bitwise_equal", "kept_tensors", "ulp_distance", "assert_curve_matches_oracle", "assert_matches_oracle",
           "assert_same_structure", "assert_stack_matches_eager", "assert_tensor_matches_oracle", "assert_tensors_close", "children", "curve_verdicts",
           "float64_copy", "fresh_leaves", "input_runs", "judge", "map_leaves", "module_runs", "nudged",
           "nudged_module", "rebuild", "to_float64"]
