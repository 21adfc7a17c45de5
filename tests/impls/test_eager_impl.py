"""The eager column's flatten is the harness's own: it shares no code with the reference it stands beside."""
import subprocess
import sys

import pytest
import torch

from ortcheck.impls.eager_io import EagerIO


def test_eager_imports_nothing_of_the_reference():
    code = ("import sys, ortcheck.impls.eager; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'reference'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_schemas_ignore_sizes_and_requires_grad_but_see_dtype_rank_and_constants():
    def schema(data):
        return EagerIO().flatten(data)[1]

    base = schema({"x": torch.zeros(2, 3), "n": 1})
    assert base == schema({"x": torch.zeros(5, 7, requires_grad=True), "n": 1})
    for other in ({"x": torch.zeros(2, 3, dtype=torch.float64), "n": 1}, {"x": torch.zeros(2), "n": 1},
                  {"x": torch.zeros(2, 3), "n": True}, {"x": torch.zeros(2, 3), "n": 1.0},
                  {"n": 1, "x": torch.zeros(2, 3)}, [torch.zeros(2, 3), 1]):
        assert base != schema(other), other


def test_unflatten_refuses_another_number_of_tensors():
    io = EagerIO()
    tensors, schema = io.flatten((torch.zeros(1), [torch.ones(2)]))
    rebuilt = io.unflatten(tensors, schema)
    assert rebuilt[0] is tensors[0] and rebuilt[1][0] is tensors[1]
    with pytest.raises(ValueError, match="2 tensors, got 1"):
        io.unflatten(tensors[:1], schema)
