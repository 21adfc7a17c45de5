"""Every test starts with IEEE subnormals, whatever an earlier test's libraries did to the thread.

Loading a shared object built with ``-ffast-math`` sets the x86 flush-to-zero and denormals-are-zero
flags of the loading thread for good. torch 2.4.1's inductor builds its CPU kernels that way, and
bitsandbytes 0.50.2 compiles one under ORTModule's 4-bit properties: every later test in that
worker then computed with subnormals flushed (eager included, so oracle and pipeline alike) and
hypothesis refused to draw floats ("we can't represent subnormal floats"), failing properties
depending on which worker ran what. Before each test the flags are cleared again.
"""
from __future__ import annotations

import sys

import torch


def subnormals_flushed() -> bool:
    """Whether this thread flushes subnormal results to zero (FTZ/DAZ set)."""
    return sys.float_info.min / 2.0 == 0.0


class SubnormalsOn:
    """A pytest plugin object: clears FTZ/DAZ before each test where something set them."""

    def pytest_runtest_setup(self, item) -> None:
        if subnormals_flushed():
            torch.set_flush_denormal(False)
