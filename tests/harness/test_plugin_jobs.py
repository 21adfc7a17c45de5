"""The plugin is one entry point over one module per job, and a suite gets ``options`` in both gradient
delivery modes by saying so (the ``both_delivery_modes`` marker), never by overriding a fixture."""
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
JOBS = ("options", "process", "fixtures", "manifests", "crashes", "distribution")


@pytest.fixture
def project(pytester):
    """A project with an implementation lacking the memory-efficient gradient delivery, and one test
    in both delivery modes beside one that isn't."""
    pytester.makeconftest(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from ortcheck import impls
        from ortcheck.impls import Capability
        from ortcheck.impls.eager import EagerImpl

        class Plain(EagerImpl):
            name = "plain"

            def capabilities(self):
                return super().capabilities() - {{Capability.MEM_EFFICIENT_GRAD}}

        impls.register("plain", Plain)
    """))
    pytester.makepyfile(test_modes=textwrap.dedent("""
        import pytest
        from ortcheck.impls import Options

        @pytest.mark.both_delivery_modes
        def test_marked(impl, options, request):
            assert options.mem_efficient_grad == request.node.callspec.id.startswith("mem_efficient-")

        def test_unmarked(impl, options):
            assert options == Options()
    """))
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider -p no:randomly\n")
    return pytester


def test_the_entry_point_registered_every_job(pytestconfig):
    assert [job for job in JOBS if not pytestconfig.pluginmanager.has_plugin(f"ortcheck.pytest_plugin.{job}")] == []


def test_both_delivery_modes_come_first_in_the_ids_and_are_na_without_the_capability(python, project):
    result = python.runpytest(project, "-v", "-rs", "--impl", "eager,plain")
    result.assert_outcomes(passed=5, skipped=1)
    result.stdout.fnmatch_lines(["*test_marked?default-eager? PASSED*", "*test_marked?mem_efficient-eager? PASSED*",
                                 "*test_marked?mem_efficient-plain? SKIPPED*", "*test_unmarked?plain? PASSED*",
                                 "*n/a*plain lacks capability mem_efficient_grad*"])


def test_dash_p_alone_loads_every_job(python, project, monkeypatch):
    """Without entry points (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``), ``-p ortcheck.pytest_plugin`` is the whole plugin."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = python.runpytest(project, "-p", "_hypothesis_pytestplugin", "-p", "ortcheck.pytest_plugin",
                              "--impl", "plain")
    result.assert_outcomes(passed=2, skipped=1)


@pytest.mark.parametrize("args, expected", [(("-n", "2"), "worksteal"), (("-n", "2", "--dist", "load"), "load"),
                                            (("-n", "0"), "no"), ((), "no")])
def test_workers_without_a_distribution_steal_work_and_an_explicit_one_is_kept(python, project, args, expected):
    """xdist's default ``load`` left one worker running slow properties alone at the end of a run
    (``ortcheck/pytest_plugin/distribution.py``)."""
    with open(project.path / "conftest.py", "a") as conftest:
        conftest.write("\ndef pytest_configure(config):\n    print('distribution:', config.option.dist)\n")
    result = python.runpytest(project, "--collect-only", "-q", *args)
    result.stdout.fnmatch_lines([f"distribution: {expected}"])
