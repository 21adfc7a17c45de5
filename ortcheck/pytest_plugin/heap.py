"""Keep full garbage collections cheap in a long test process.

A full ``gc.collect()`` walks every live container object, and a pytest worker holds more with each
test (imported modules, collected items, hypothesis' per-test state). ORTModule collects at every
export (``_io.parse_outputs_for_onnx_export_and_extract_schema``), so the suites paid 0.14 s per
example in a fresh process and more as the worker aged: most of a layer property's time.

Between tests, what the earlier tests left reachable is moved to the collector's permanent
generation (``gc.freeze``) after one collection, so a collection inside a test walks only what that
test made. Objects are still freed by reference counting; only cycles that become garbage while
frozen wait until the next thaw, done every ``THAW_EVERY`` tests so memory stays bounded.
"""
from __future__ import annotations

import gc

THAW_EVERY = 100


class FrozenHeap:
    """A pytest plugin object: freezes the heap before each test, thaws and collects every ``THAW_EVERY``."""

    def __init__(self, thaw_every: int = THAW_EVERY):
        self.thaw_every = thaw_every
        self.tests = 0

    def pytest_runtest_setup(self, item) -> None:
        if self.tests % self.thaw_every == 0:
            gc.unfreeze()
        self.tests += 1
        gc.collect()
        gc.freeze()

    def pytest_unconfigure(self, config) -> None:
        gc.unfreeze()
