"""How a run's tests are spread over xdist workers: a contiguous share each, rebalanced by stealing.

Under ``-n`` without ``--dist``, xdist hands out tests in chunks of up to half of what is left per
worker (``load``): near the end one worker can hold a run of slow properties while the other has run
out (ort119's suites, Intel Xeon, 2 workers: one worker ran alone for the last 77 s of 273).
``worksteal`` gives each worker a contiguous share of the collection, so the cells of a property that
draw the same models, and reuse each other's exports, still meet in one process, and an idle worker
takes half of what another has left. An explicit ``--dist`` is kept.
"""
from __future__ import annotations

import pytest

DEFAULT = "worksteal"  # pytest-xdist 3.2.1 and later (pyproject.toml): 3.2.0 could hang in it


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config):
    """Before any implementation of the hook: xdist's turns ``-n`` without ``--dist`` into ``load``."""
    option = config.option
    if (not hasattr(config, "workerinput") and getattr(option, "numprocesses", None)
            and getattr(option, "dist", None) == "no" and not getattr(option, "distload", False)):
        option.dist = DEFAULT
    return (yield)
