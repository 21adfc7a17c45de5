"""A bench script runs as ``python bench/X.py``, which puts bench/ first on the import path: a file
named like a standard-library module there (``profile.py`` did) breaks every bench that imports
torch's optimizers (cProfile imports ``profile``)."""
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_no_bench_file_shadows_a_standard_library_module():
    shadowing = sorted(p.name for p in BENCH.glob("*.py") if p.stem in sys.stdlib_module_names)
    assert not shadowing, f"rename {shadowing}: they hide the standard library from every bench script"
