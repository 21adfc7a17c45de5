"""Failure patterns: an expected failure is the recorded one only when its type and first line say so."""
import re

import pytest

from ortcheck.findings.failures import CRASH, FailurePattern, ProcessDied, draft_match, first_line, kind


class ExportError(RuntimeError):
    pass


@pytest.mark.parametrize("entry, error, accepted", [
    ({"raises": "AssertionError"}, AssertionError("implementation error 2e-07 > bound 1e-09"), True),
    ({"raises": "AssertionError"}, ValueError("implementation error"), False),
    ({"raises": "RuntimeError"}, ExportError("a subclass"), True),                      # isinstance, as pytest's raises
    ({"raises": f"{__name__}.ExportError"}, ExportError("qualified"), True),
    ({"match": r"error \S+ > bound"}, AssertionError("implementation error 2e-07 > bound 1e-09"), True),
    ({"match": r"error \S+ > bound"}, AssertionError("structure differs\nimplementation error 1 > bound 0"), False),
    ({"raises": ["crash", "TypeError"], "match": "keywords must be strings"}, TypeError("keywords must be strings"), True),
    ({"raises": "TypeError", "match": "keywords"}, ExceptionGroup("two", [TypeError("keywords"), TypeError("other")]), False),
    ({"raises": "TypeError", "match": "keywords"}, ExceptionGroup("two", [TypeError("keywords a"), TypeError("keywords b")]), True),
])
def test_a_pattern_accepts_only_the_recorded_failure(entry, error, accepted):
    assert FailurePattern.parse(entry).accepts(error) is accepted


def test_only_a_pattern_naming_crash_accepts_a_dead_worker():
    assert FailurePattern.parse({"raises": ["crash", "AssertionError"]}).accepts_crash()
    assert not FailurePattern.parse({"raises": "AssertionError", "match": "crash"}).accepts_crash()


def test_a_process_that_died_is_a_crash_to_patterns_and_reports():
    """A test recorded as crashing runs in a child whose death comes back as a ProcessDied."""
    died = ProcessDied("the implementation crashed (signal SIGSEGV)")
    assert FailurePattern.parse({"raises": "crash"}).accepts(died) and kind(died) == CRASH
    assert FailurePattern.parse({"raises": "crash", "match": "SIGSEGV"}).accepts(died)
    assert not FailurePattern.parse({"raises": "AssertionError"}).accepts(died)
    assert not FailurePattern.parse({"raises": "crash"}).accepts(RuntimeError("crash")) and kind(RuntimeError()) == "RuntimeError"


def test_a_drafted_match_holds_across_the_numbers_that_move():
    line = first_line(AssertionError("x[0, 2]: 1.87 where float64 eager gives 1.74; implementation error 0.131 > "
                                     "bound 1.1e-05 = 32 x max(ulp 2.82e-07)\nassert False"))
    pattern = draft_match(line)
    assert re.search(pattern, line)
    assert re.search(pattern, line.replace("0.131", "2.5e-3").replace("1.87", "-0.5"))
    assert not re.search(pattern, line.replace("implementation", "eager"))
    assert "[0, 2]" in line and re.search(pattern, "x[0, 2]: 1.87") is None  # indices stay literal: a prefix is not enough
