"""Tests of the ``ortmodule`` adaptor itself: option mapping, env hygiene, counters, I/O helpers.

They check that the adaptor reports what the real ORTModule does; findings about ORTModule's own
behaviour belong to the suites and the expected-failure manifest, not here. Skipped (one line)
where onnxruntime-training 1.19.2 is not installed; run them in the ort119 env.
"""
from __future__ import annotations

import collections
import copy
import os
import subprocess
import sys

import pytest
import torch

from ortcheck import impls
from ortcheck.impls.base import Options

IMPL = impls.get("ortmodule")
REASON = IMPL.unavailable_reason()
needs_ort = pytest.mark.skipif(REASON is not None, reason=f"ortmodule unavailable: {REASON}")

Pair = collections.namedtuple("Pair", "first second")


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


class _Cast(torch.nn.Module):
    """Accepts any float dtype and rank, so schema changes are legal in eager."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.linear(x.float())


def _ortmodule_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith("ORTMODULE_")}


def test_import_never_touches_onnxruntime():
    code = ("import sys, ortcheck.impls.ortmodule as m; r = m.OrtModuleImpl().name; "
            "assert 'onnxruntime.training' not in sys.modules, 'imported eagerly'")
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def test_unavailable_reason_is_one_line_or_none():
    assert REASON is None or (REASON.strip() and "\n" not in REASON)


@needs_ort
def test_mlp_forward_backward_match_eager():
    module = _mlp()
    eager = copy.deepcopy(module)
    wrapped = IMPL.wrap(module)
    x = torch.randn(3, 4)
    x_eager = x.clone().requires_grad_()
    x_ort = x.clone().requires_grad_()
    out_ort, out_eager = wrapped(x_ort), eager(x_eager)
    torch.testing.assert_close(out_ort, out_eager)
    out_ort.pow(2).sum().backward()
    out_eager.pow(2).sum().backward()
    torch.testing.assert_close(x_ort.grad, x_eager.grad)
    for p_ort, p_eager in zip(wrapped.parameters(), eager.parameters()):
        torch.testing.assert_close(p_ort.grad, p_eager.grad)


@needs_ort
def test_options_reach_ortmodule_and_env_is_restored(monkeypatch):
    # Values a user may have exported: must neither leak into the wrap nor be lost afterwards.
    monkeypatch.setenv("ORTMODULE_MEMORY_OPT_LEVEL", "2")
    monkeypatch.setenv("ORTMODULE_FALLBACK_POLICY", "FALLBACK_FORCE_TORCH_FORWARD")
    before = _ortmodule_env()
    wrapped = IMPL.wrap(_mlp(), Options(memory_opt_config=("Gemm+:1:-1",)))
    assert _ortmodule_env() == before
    wrapped(torch.randn(3, 4)).sum().backward()
    assert _ortmodule_env() == before

    manager = wrapped._torch_module._execution_manager(True)
    runtime = manager._runtime_options
    assert runtime.memory_optimization_level == 0
    assert runtime.fallback_policy.name == "FALLBACK_DISABLE"
    assert runtime.skip_check.is_disabled()
    with open(runtime.memory_optimizer_config_file_path) as handle:
        assert handle.read() == '["Gemm+:1:-1"]'


@needs_ort
def test_env_and_export_restored_when_forward_raises():
    before_env, before_export = _ortmodule_env(), torch.onnx.export
    wrapped = IMPL.wrap(torch.nn.Linear(4, 2))
    with pytest.raises(Exception):
        wrapped(torch.randn(3, 5))  # wrong feature size: eager raises too
    assert _ortmodule_env() == before_env
    assert torch.onnx.export is before_export


@needs_ort
def test_export_counter_follows_input_schema():
    wrapped = IMPL.wrap(_Cast())
    assert IMPL.observe(wrapped).exports == 0
    wrapped(torch.randn(3, 4))
    first = IMPL.observe(wrapped)
    assert (first.exports, first.gradient_builds, first.sessions) == (1, 1, 1)
    wrapped(torch.randn(7, 4))  # other size, same schema
    assert IMPL.observe(wrapped).exports == 1
    wrapped(torch.randn(2, 7, 4))  # other rank
    assert IMPL.observe(wrapped).exports == 2
    wrapped(torch.randn(2, 7, 4, dtype=torch.float64))  # other dtype
    observed = IMPL.observe(wrapped)
    assert (observed.exports, observed.gradient_builds, observed.sessions) == (3, 3, 3)
    assert observed.fallbacks == 0 and observed.last_reason is None


@needs_ort
def test_requires_grad_change_rebuilds_gradient_without_export():
    wrapped = IMPL.wrap(_Cast())
    wrapped(torch.randn(3, 4))
    wrapped(torch.randn(3, 4, requires_grad=True))
    observed = IMPL.observe(wrapped)
    assert (observed.exports, observed.gradient_builds, observed.sessions) == (1, 2, 2)


@needs_ort
def test_counters_are_per_wrapped_module():
    a, b = IMPL.wrap(_Cast()), IMPL.wrap(_Cast())
    a(torch.randn(3, 4))
    a(torch.randn(2, 3, 4))
    b(torch.randn(3, 4))
    assert (IMPL.observe(a).exports, IMPL.observe(b).exports) == (2, 1)


@needs_ort
def test_fallback_auto_runs_eager_and_counts():
    class Unexportable(torch.nn.Module):
        def forward(self, x):
            return torch.fft.fft(x).real  # no ONNX symbolic for aten::fft_fft at opset 17

    x = torch.randn(2, 4)
    wrapped = IMPL.wrap(Unexportable(), Options(fallback="auto"))
    torch.testing.assert_close(wrapped(x), torch.fft.fft(x).real)
    wrapped(x)
    assert IMPL.observe(wrapped).fallbacks == 2
    with pytest.raises(Exception, match="exporting the PyTorch model to ONNX"):
        IMPL.wrap(Unexportable(), Options(fallback="disable"))(x)


@needs_ort
def test_flatten_unflatten_round_trip_keeps_containers_and_tensor_objects():
    t = [torch.randn(2), torch.zeros(0, 3), torch.tensor(1.0), torch.ones(2, dtype=torch.int64)]
    data = {"pair": Pair(t[0], [t[1], None]), "od": collections.OrderedDict(z=t[2], a=(t[3], "tag"))}
    tensors, schema = IMPL.flatten(data)
    assert [id(x) for x in tensors] == [id(x) for x in t]
    back = IMPL.unflatten(tensors, schema)
    assert type(back) is dict and type(back["pair"]) is Pair and type(back["od"]) is collections.OrderedDict
    assert list(back["od"]) == ["z", "a"] and back["od"]["a"][1] == "tag" and back["pair"].second[1] is None
    assert back["pair"].first is t[0] and back["pair"].second[0] is t[1]
    assert back["od"]["z"] is t[2] and back["od"]["a"][0] is t[3]


@needs_ort
def test_flatten_uses_ortmodules_constant_as_tensor_mode():
    tensors, schema = IMPL.flatten([torch.randn(2), 3])
    assert len(tensors) == 2 and tensors[1].ndim == 0
    assert torch.is_tensor(IMPL.unflatten(tensors, schema)[1])  # ORTModule hands ints back as tensors


@needs_ort
def test_same_schema_ignores_sizes_not_dtype_or_rank():
    schema = lambda x: IMPL.flatten(x)[1]  # noqa: E731
    assert IMPL.same_schema(schema([torch.randn(2, 3)]), schema([torch.randn(5, 1)]))
    assert not IMPL.same_schema(schema([torch.randn(2)]), schema([torch.randn(2, dtype=torch.float64)]))
    assert not IMPL.same_schema(schema([torch.randn(2)]), schema([torch.randn(2, 1)]))


def test_refusals_are_ortmodules_fallback_exceptions_only():
    """Its deliberate refusals; a RuntimeError from inside onnxruntime's session is none."""
    assert impls.get("eager").refusal_errors() == ()
    if REASON is not None:
        assert IMPL.refusal_errors() == ()
        return
    from onnxruntime.training.ortmodule import ORTModuleFallbackException
    from onnxruntime.training.ortmodule._fallback_exceptions import ORTModuleIOError

    assert IMPL.refusal_errors() == (ORTModuleFallbackException,)
    assert issubclass(ORTModuleIOError, IMPL.refusal_errors()) and not issubclass(RuntimeError, IMPL.refusal_errors())
