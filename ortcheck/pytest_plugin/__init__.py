"""The ortcheck pytest plugin: one module per job, loaded together through one entry point.

The ``pytest11`` entry point (or ``-p ortcheck.pytest_plugin``) names this package; pytest then
registers each module below, so any project that installs ortcheck can run the suites against its
own pipeline with ``pytest --impl NAME``:

- :mod:`~ortcheck.pytest_plugin.options`: command-line options, markers, the implementations selected;
- :mod:`~ortcheck.pytest_plugin.process`: the state every test process starts from (seed, threads, heap,
  subnormals, the run's convergence oracle curves: helped by ``threadbudget``, ``heap``, ``fpenv`` and
  ``oracle_folder``);
- :mod:`~ortcheck.pytest_plugin.fixtures`: ``impl``, ``device``, ``options`` (in both gradient delivery
  modes under the ``both_delivery_modes`` marker) and what skips as n/a;
- :mod:`~ortcheck.pytest_plugin.manifests`: expected failures from the manifests, strict and as recorded;
- :mod:`~ortcheck.pytest_plugin.crashes`: time bounds (``timebound``, kept from outside the process by
  ``watchdog``), recorded crashes in a child (``forked``), crashed workers, tests that never reported;
- :mod:`~ortcheck.pytest_plugin.distribution`: how xdist spreads the tests over its workers.

The helper modules beside the jobs are no plugins: the jobs register what they need of them.
"""
import pytest

from ortcheck.report.collector import NOT_APPLICABLE

pytest_plugins = [f"{__name__}.{job}" for job in ("options", "process", "fixtures", "manifests", "crashes", "distribution")]


def not_applicable(reason: str) -> None:
    """Skip as "n/a": the property does not apply to this implementation (the report says so once)."""
    pytest.skip(NOT_APPLICABLE + reason)
