"""Controls of the recompute suite: the memory optimizer redrawing dropout, over-claiming, applying too little."""
from controls.base import DuringForward


def _test(name: str) -> str:
    return f"suites/test_recompute.py::{name}"


class RecomputeRedrawsDropout(DuringForward):
    """Recomputes a Dropout by running it again: a new mask, so gradients no longer match."""
    caught_by = (_test("test_bloom_with_dropout_trains_bitwise_like_level_0[recompute_redraws_dropout-1]"),
                 _test("test_recompute_with_dropout_changes_no_number[recompute_redraws_dropout-1]"))

    def seam(self):
        from reference.recompute.rewrite import DROPOUT_RERUN

        return DROPOUT_RERUN.overridden(True)


class RecomputeOverClaims(DuringForward):
    """Its report claims one byte more per occurrence than recompute saves."""
    caught_by = (_test("test_kept_bytes_drop_by_the_claimed_saving[recompute_over_claims-1]"),)

    def seam(self):
        from reference.recompute.plans import SAVING_OVERSTATED_BY

        return SAVING_OVERSTATED_BY.overridden(1)


class RecomputeAppliesOneLess(DuringForward):
    """Applies one occurrence fewer than a count asks for (an off-by-one in "the first N")."""
    caught_by = (_test("test_applied_plans_are_what_was_asked[recompute_applies_one_less-0]"),
                 _test("test_applied_plans_are_what_was_asked[recompute_applies_one_less-1]"))

    def seam(self):
        from reference.recompute import APPLIED_SHORT_BY

        return APPLIED_SHORT_BY.overridden(1)
