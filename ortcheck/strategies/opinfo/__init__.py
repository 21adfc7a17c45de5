"""PyTorch's own OpInfo database as one-op cases for pipelines.

The hand-written catalogue (:mod:`ortcheck.strategies.ops`) covers the ops transformer training
uses; PyTorch's ``op_db`` covers ~500 more, with samples its authors chose to reach each op's
edges. A sample (``op(sample.input, *sample.args, **sample.kwargs)``) becomes a module whose
*inputs are its tensors* (also tensors inside lists: ``cat``, ``stack``, ``index_put``) and whose
other arguments are baked into the call: a pipeline exports tensors as graph inputs and constants
as attributes, so this is how a user's model would hand it the same call.

The call goes through ``op.gradcheck_wrapper`` and ``sample.output_process_fn_grad`` as PyTorch's
own gradient tests do: they make gradients well defined (a hermitian input symmetrized, an
eigenvector's sign dropped), so a mismatch is the pipeline's, not the sample's. Outputs are
flattened to a tuple of tensors, the shape ``check_case`` of ``suites/test_op_grads.py`` judges.

Importing ``op_db`` takes ~6.5 s, and every process that collects the suites would pay it for the
test ids alone (CLI runs, shards, the README's main job). The ids of each torch build the project
tests on are checked in (``ids/torch-<version>.txt``, written by :func:`write_ids`), so collecting
reads a file; ``op_db`` is imported when an OpInfo test runs. A build without a list imports it.

``op_db`` is private API (``torch.testing._internal``, needs ``expecttest``): it is imported on
first use only, so nothing else of the harness depends on it, and what its import changes in the
process is undone (:func:`_import_side_effects_undone`): it registers hypothesis profiles of its own
under our names and loads one (every later property in the process would run torch's 10 examples),
freezes ``torch.backends`` flags and wraps TorchScript calls.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import random
import sys
from pathlib import Path
from typing import Any, Iterator
from unittest import mock

import torch

from ortcheck.nested import children, map_leaves

SCOPE_DTYPES = (torch.float32, torch.float64)
# In op_db's autograd scope but not checkable as a one-op module; id -> why.
EXCLUDED = {
    "sparse.sampled_addmm": "sparse CSR inputs: not exportable, and the oracle's runs can't copy or compare them",
    "sparse.mm.reduce": "sparse CSR inputs: not exportable, and the oracle's runs can't copy or compare them",
    "as_strided.partial_views": "reads storage outside its input view: a lifted input is a fresh tensor without it",
    "to_sparse": "a sparse output: the oracle's runs can't copy or compare it (eager itself fails the check)",
}


def op_id(op) -> str:
    """Stable id of an OpInfo: its name, and its variant's (one name can have several variants)."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


@functools.lru_cache(maxsize=1)
def in_scope() -> dict[str, Any]:
    """The OpInfos a pipeline must train through on CPU: autograd supported, float32 and float64
    supported (the oracle recomputes in float64), keyed by :func:`op_id` in ``op_db``'s order;
    less :data:`EXCLUDED`."""
    with _import_side_effects_undone():
        from torch.testing._internal.common_methods_invocations import op_db

    chosen = {}
    for op in op_db:
        if (op.supports_autograd and set(SCOPE_DTYPES) <= set(op.supported_dtypes("cpu"))
                and op_id(op) not in EXCLUDED):
            chosen.setdefault(op_id(op), op)
    return chosen


@contextlib.contextmanager
def _import_side_effects_undone() -> Iterator[None]:
    """The process as it was before ``torch.testing._internal`` was imported inside: hypothesis'
    profiles and the loaded one, ``torch.backends``' flag mutability, TorchScript's call methods,
    torch's random state (torch 2.4.1's op_db draws from it at import: the first OpInfo test of a
    process drew other samples than the next, and a finding's margin moved from 4.3x to 1.4x)."""
    from hypothesis import settings

    profiles, current = dict(settings._profiles), settings._current_profile
    random_state = torch.get_rng_state()
    frozen = torch.backends.flags_frozen()
    script_calls = torch._C.ScriptFunction.__call__, torch._C.ScriptMethod.__call__
    try:
        yield
    finally:
        settings._profiles.clear()
        settings._profiles.update(profiles)
        if current is not None:
            settings.load_profile(current)
        torch.backends.flags_frozen.__globals__["__allow_nonbracketed_mutation_flag"] = not frozen  # no setter
        torch._C.ScriptFunction.__call__, torch._C.ScriptMethod.__call__ = script_calls
        torch.set_rng_state(random_state)


IDS = Path(__file__).with_name("ids")


def ids_file(version: str | None = None) -> Path:
    """Where the in-scope ids of torch ``version`` (default: this one) are checked in."""
    return IDS / f"torch-{version or torch.__version__}.txt"


def ids() -> list[str]:
    """The in-scope op ids in ``op_db``'s order: this torch's checked-in list (less
    :data:`EXCLUDED`, which may have grown since), else from ``op_db`` itself (an ImportError naming
    what to install where it cannot be imported)."""
    listed = ids_file()
    if listed.is_file():
        return [op for op in listed.read_text().split() if op not in EXCLUDED]
    return list(_op_db_scope())


def write_ids() -> Path:
    """Check in this torch's in-scope ids (after a torch upgrade; ``tests/strategies`` says when)."""
    IDS.mkdir(exist_ok=True)
    path = ids_file()
    path.write_text("".join(f"{op}\n" for op in _op_db_scope()))
    return path


def lookup(key: str):
    """The OpInfo of in-scope id ``key`` (imports ``op_db``), naming a checked-in list that lists
    an id this process's ``op_db`` does not have in scope."""
    scope = _op_db_scope()
    if key not in scope:
        raise KeyError(f"OpInfo {key!r} is not in scope in this process's op_db; {ids_file()} lists it: "
                       f"regenerate it (python -c 'from ortcheck.strategies import opinfo; opinfo.write_ids()')")
    return scope[key]


def _op_db_scope() -> dict[str, Any]:
    try:
        return in_scope()
    except ImportError as error:
        raise ImportError(f"the OpInfo suite needs torch's op_db, which imports expecttest "
                          f"(pip install expecttest; pinned in pyproject.toml's test extra): {error}") from error


class _Slot:
    """Where the module's ``index``-th input goes in the baked call (not a dataclass: the nested
    walk would open it)."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __repr__(self) -> str:
        return f"_Slot({self.index})"


def draws_random(op) -> bool:
    """Whether the op draws random numbers (dropout, rrelu, bernoulli, ...). ``op_db`` reseeds torch
    inside such calls (``wrapper_set_seed``), so eager is repeatable but a pipeline drawing with its
    own generator can't match it: a mismatch there is expected, not a wrong value."""
    return "wrapper_set_seed" in getattr(getattr(op.op, "__code__", None), "co_names", ())


@dataclasses.dataclass
class OpInfoCase:
    """One sample of one OpInfo: ``module()`` computes it, ``inputs()`` are its tensors."""

    id: str
    op: Any
    sample: Any
    template: tuple  # (input, args, kwargs) with every tensor replaced by a _Slot
    tensors: tuple[torch.Tensor, ...]

    def module(self) -> torch.nn.Module:
        return OpInfoModule(self)

    def inputs(self, device: str = "cpu") -> tuple[torch.Tensor, ...]:
        """Fresh leaves with the sample's values; floating ones keep the sample's requires_grad."""
        return tuple(t.detach().to(device, copy=True).requires_grad_(t.requires_grad and t.is_floating_point())
                     for t in self.tensors)

    def __deepcopy__(self, memo) -> "OpInfoCase":
        """Itself: a case is constant data (its call reads the op and the template, never writes
        them), and a deep copy of a module calling it (the oracle's float64 and nudged twins) would
        otherwise copy op_db's whole ``OpInfo`` with it, a sixth of an eager OpInfo test."""
        return self

    def call(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        first, args, kwargs = map_leaves(self.template, lambda v: inputs[v.index] if isinstance(v, _Slot) else v)
        out = self.op.gradcheck_wrapper(self.op.op, first, *args, **kwargs)
        return tuple(_tensor_leaves(self.sample.output_process_fn_grad(out)))


class OpInfoModule(torch.nn.Module):
    """A module whose forward is one OpInfo sample's call on its inputs (attributes baked in)."""

    def __init__(self, case: OpInfoCase):
        super().__init__()
        self.case = case

    def forward(self, *inputs):
        return self.case.call(*inputs)


def case(key: str, op, sample) -> OpInfoCase:
    """Lift a SampleInput's tensors out as inputs; the same tensor twice is one input (its gradient
    accumulates over both uses, as in eager)."""
    tensors: list[torch.Tensor] = []
    seen: dict[int, int] = {}

    def lift(value):
        if not isinstance(value, torch.Tensor):
            return value
        if id(value) not in seen:
            seen[id(value)] = len(tensors)
            tensors.append(value)
        return _Slot(seen[id(value)])

    template = map_leaves((sample.input, tuple(sample.args), dict(sample.kwargs)), lift)
    return OpInfoCase(key, op, sample, template, tuple(tensors))


def cases(key: str, dtype: torch.dtype = torch.float32, limit: int | None = None,
          device: str = "cpu") -> Iterator[OpInfoCase]:
    """The first ``limit`` samples of OpInfo ``key`` (``op_db`` seeds each sample itself)."""
    info = lookup(key)
    with _no_test_lookup(device):
        samples = iter(info.sample_inputs(device, dtype, requires_grad=True))
    for _ in itertools.count() if limit is None else range(limit):
        with _no_test_lookup(device):
            sample = next(samples, None)
        if sample is None:
            return
        yield case(key, info, sample)


_TEST_LOOKUP_MODULES = ("torch.testing._internal.common_utils", "torch.testing._internal.opinfo.core")


@contextlib.contextmanager
def _no_test_lookup(device: str) -> Iterator[None]:
    """``op_db``'s sample iterators, at their start and at each sample, look for the unittest method
    calling them (``extract_test_fn``: ``inspect.stack()``, every frame's source read; 12 ms a call
    under pytest's stack, a fifth of an OpInfo test's time) to seed and tag the samples by its
    name. A pytest function is no ``TestCase``: the search finds none, so it is skipped here, with
    the samples it would give (torch's default seed).

    Each sample is then seeded with ``torch.manual_seed``, which also queues the seed for CUDA, XPU
    and MTIA until they start, each queued with the caller's formatted stack (a tenth of an eager
    OpInfo test). Samples made on the CPU draw from the CPU's generator alone, so there only it
    (and Python's and NumPy's, as op_db seeds them) is seeded."""
    with contextlib.ExitStack() as patches:
        for module in map(sys.modules.get, _TEST_LOOKUP_MODULES):
            if hasattr(module, "extract_test_fn"):
                patches.enter_context(mock.patch.object(module, "extract_test_fn", lambda: None))
        common_utils = sys.modules.get(_TEST_LOOKUP_MODULES[0])
        if device == "cpu" and hasattr(common_utils, "set_rng_seed"):
            patches.enter_context(mock.patch.object(common_utils, "set_rng_seed", _cpu_seeded(common_utils)))
        yield


def _cpu_seeded(common_utils):
    """op_db's ``set_rng_seed`` with the CPU's generator seeded in place of ``torch.manual_seed``."""
    def set_rng_seed(seed=None):
        seed = common_utils.SEED if seed is None else seed
        torch.default_generator.manual_seed(seed)
        random.seed(seed)
        if common_utils.TEST_NUMPY:
            common_utils.np.random.seed(seed)

    return set_rng_seed


def _tensor_leaves(value: Any) -> list[torch.Tensor]:
    pairs = children(value)
    if pairs is None:
        return [value] if isinstance(value, torch.Tensor) else []
    return [t for _, child in pairs for t in _tensor_leaves(child)]


__all__ = ["EXCLUDED", "IDS", "ids", "ids_file", "lookup", "write_ids", "OpInfoCase", "OpInfoModule", "SCOPE_DTYPES", "case", "cases", "draws_random", "in_scope",
           "op_id"]
