"""Every module of reference/, ortcheck/ and controls/ imports alone, each in a fresh interpreter. A module that
imports only because another happened to be imported first (an import cycle: "cannot import name ...
from partially initialized module") fails here, named with its error. A module whose import needs an
optional distribution this environment lacks is skipped naming the distribution, and only when the
missing module is one of ``OPTIONAL``'s: a missing project module, or any other error, fails.

Each module is imported in a process of its own from the ``python`` fixture (tests/harness/conftest.py:
forked from a server that imported the third-party libraries and no project module), so the
project's import order is fresh every time while torch is imported once per worker, not once per
module (a fresh interpreter per module cost about 2 s of CPU apiece, 585 s for the lot).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Top-level module missing -> the distribution that provides it (absent in one of the environments).
OPTIONAL = {"onnxruntime.training": "onnxruntime-training", "bitsandbytes": "bitsandbytes",
            "transformers": "transformers", "matplotlib": "matplotlib"}
MISSING = 3  # the probe's exit status when a module is not found
PROBE = """
import importlib, sys
try:
    importlib.import_module(sys.argv[1])
except ModuleNotFoundError as error:
    print(error.name)
    sys.exit(%d)
""" % MISSING


def _modules() -> list[str]:
    """Every importable module; ``__main__`` modules are programs (importing one runs it), not modules."""
    found = []
    for top in ("reference", "ortcheck", "controls"):
        for path in sorted((REPO / top).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            if parts[-1] != "__main__":
                found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def import_alone(python, module: str, cwd: Path = REPO) -> tuple[int, str]:
    """(0, ""), (MISSING, the missing module) or (1, the error) for ``import module`` in a fresh process."""
    result = python.run("-c", PROBE, module, cwd=cwd)
    if result.returncode in (0, MISSING):
        return result.returncode, result.stdout.strip()
    return 1, result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"exit status {result.returncode}"


def _fresh(code: str, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def optional_distribution(missing: str) -> str | None:
    """The optional distribution whose absence explains ``missing`` not being found, or None."""
    return next((dist for module, dist in OPTIONAL.items() if missing == module or missing.startswith(module + ".")),
                None)


def test_the_modules_were_found():
    modules = _modules()
    assert {"reference.runtime", "reference.grads", "controls.transitions", "ortcheck.checks.ddp"} <= set(modules)
    assert "ortcheck.models.__main__" not in modules


def test_only_an_optional_distribution_excuses_a_missing_module():
    assert optional_distribution("onnxruntime.training.ortmodule") == "onnxruntime-training"
    assert optional_distribution("bitsandbytes") == "bitsandbytes"
    assert optional_distribution("reference.grads.stages") is None  # a project module moved away: a failure
    assert optional_distribution("onnxruntime") is None             # both environments have one
    assert optional_distribution("bitsandbytes_other") is None


def test_the_probe_sees_a_cycle(python, tmp_path):
    """What this file is for: a lower package reaching into an upper one that imports it back (as
    reference.runtime did: its staged module imported grads.stages, and grads imports runtime) works
    when the upper one is imported first and fails alone, not mistaken for a missing module."""
    files = {"__init__.py": "", "low/__init__.py": "from cycle_probe.low.x import X\n",
             "low/x.py": "from cycle_probe.high.util import U\nX = U\n",
             "high/__init__.py": "from cycle_probe.low import X\n", "high/util.py": "U = 1\n"}
    for name, text in files.items():
        (tmp_path / "cycle_probe" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "cycle_probe" / name).write_text(text)
    assert _fresh(PROBE, "cycle_probe.high", cwd=tmp_path).returncode == 0  # works when the top comes first
    result = _fresh(PROBE, "cycle_probe.low", cwd=tmp_path)
    assert result.returncode not in (0, MISSING)
    assert "partially initialized module" in result.stderr
    # and the forked processes of the ``python`` fixture see it too, each import fresh
    assert import_alone(python, "cycle_probe.high", cwd=tmp_path) == (0, "")
    status, detail = import_alone(python, "cycle_probe.low", cwd=tmp_path)
    assert status == 1 and "partially initialized module" in detail
    assert import_alone(python, "cycle_probe.nonesuch", cwd=tmp_path) == (MISSING, "cycle_probe.nonesuch")


@pytest.mark.parametrize("module", _modules())
def test_each_module_imports_alone(module, python):
    status, detail = import_alone(python, module)
    if status == MISSING:
        dist = optional_distribution(detail)
        if dist is None:
            pytest.fail(f"import {module}: module {detail!r} not found (not an optional distribution)")
        pytest.skip(f"import {module} needs {dist}, not installed here ({detail!r} missing)")
    assert status == 0, f"import {module} alone fails: {detail}"


def test_the_golden_cli_loads_no_pytest():
    """``ortcheck golden`` runs outside pytest: its import must not load pytest nor the plugin."""
    result = _fresh("import sys, ortcheck.golden_cli; print(sorted(m for m in sys.modules if m.split('.')[0] in "
                    "('pytest', '_pytest') or m.startswith('ortcheck.pytest_plugin')))")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
