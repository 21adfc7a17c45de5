"""What a mixture of experts routes with (``bincount``, ``histc``, ``_grouped_mm``), exported by the
reference: counts equal to torch's (a count one off routes a token to the wrong expert), and the grouped
products with every gradient equal to a per-expert loop of plain matmuls in float64."""
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ortcheck.checks.one_op import OneOp
from reference import ReferenceModule


@pytest.mark.parametrize("minlength", [0, 4, 9])
@pytest.mark.parametrize("selected", [[[0, 2], [2, 5]], [[3, 3]], []], ids=["spread", "one_value", "empty"])
def test_bincount_counts_as_torch_with_as_many_bins(minlength, selected):
    """As transformers' load-balancing loss counts tokens per expert."""
    x = torch.tensor(selected, dtype=torch.int64)
    module = OneOp(lambda x: torch.bincount(x.reshape(-1), minlength=minlength))
    out = ReferenceModule(module)(x)
    assert out.dtype == torch.int64 and torch.equal(out, module(x))


def _near_edges(bins: int, low: float, width: float):
    """Entries on the bins' edges (min and max among them) and outside, each maybe moved one step of
    float32 to either side: where a bin's position is computed in another order, these land elsewhere."""
    edge = st.integers(-2, 2 * bins + 2).map(lambda half: low + half * width / (2 * bins))
    moved = st.tuples(edge, st.sampled_from([0, -1, 1])).map(
        lambda e: float(np.nextafter(np.float32(e[0]), np.float32(e[1] * np.inf))) if e[1] else e[0])
    return st.lists(moved | st.just(float("nan")), max_size=12)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), bins=st.integers(1, 7), low=st.integers(-1, 3).map(float),
       width=st.sampled_from([0.0, 1.0, 2.5, 6.0]), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_histc_bins_as_torch(data, bins, low, width, dtype):
    """Every entry in the bin torch's kernel puts it in: on an edge, at ``max`` (the last bin), outside
    or NaN (uncounted); ``min == max`` takes the data's extremes, or widens by one without data."""
    values = data.draw(_near_edges(bins, low, width or 1.0), label="values")
    if width == 0:
        values = [v for v in values if v == v]  # torch refuses a NaN range taken from the data
    x = torch.tensor(values, dtype=dtype)
    module = OneOp(lambda x: torch.histc(x, bins=bins, min=low, max=low + width))
    out = ReferenceModule(module)(x)
    want = module(x)
    assert out.dtype == want.dtype and torch.equal(out, want), f"{values}: {out.tolist()} != {want.tolist()}"


def test_histc_counts_the_experts_as_transformers_does():
    """transformers' grouped experts: ``histc(sorted_ids.float(), bins=E, min=0, max=E - 1)``."""
    ids = torch.tensor([0, 0, 1, 3, 3, 3, 2, 0], dtype=torch.int64)
    module = OneOp(lambda ids: torch.histc(ids.sort().values.float(), bins=4, min=0, max=3))
    assert ReferenceModule(module)(ids).tolist() == [3.0, 1.0, 1.0, 3.0]


def _looped(a, b, offs):
    """The truth: each expert's rows times its matrix; rows past the last offset zero."""
    out, start = a.new_zeros(a.shape[0], b.shape[-1]), 0
    for expert, end in enumerate(offs.tolist()):
        out[start:end] = a[start:end] @ b[expert]
        start = end
    return out


@pytest.mark.parametrize("offs", [[2, 2, 5, 6], [0, 0, 0, 6], [1, 3, 4, 4], [1, 2, 3, 4]],
                         ids=["an_idle_expert", "one_expert", "idle_last", "rows_past_the_end"])
def test_grouped_mm_multiplies_each_experts_rows_with_its_matrix(offs):
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(6, 8, generator=generator, requires_grad=True)
    b = torch.randn(4, 8, 4, generator=generator, requires_grad=True)
    offs = torch.tensor(offs, dtype=torch.int32)
    seed = torch.randn(6, 4, generator=generator)
    module = OneOp(lambda a, b, offs: torch.nn.functional.grouped_mm(a, b, offs=offs) * seed)
    out = ReferenceModule(module)(a, b, offs)
    out.sum().backward()
    exact_a, exact_b = (t.detach().double().requires_grad_() for t in (a, b))
    want = _looped(exact_a, exact_b, offs) * seed.double()
    want.sum().backward()
    rows = int(offs[-1])  # rows past the end are unwritten in torch's kernel: only the owned rows are compared
    torch.testing.assert_close(out[:rows].double(), want[:rows], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(a.grad.double(), exact_a.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(b.grad.double(), exact_b.grad, rtol=1e-5, atol=1e-5)


def test_grouped_mm_forms_beyond_the_experts_are_refused_by_name():
    a, b = torch.randn(4, 8), torch.randn(8, 12)
    module = OneOp(lambda a, b, offs: torch.nn.functional.grouped_mm(a, b, offs=offs))
    with pytest.raises(Exception, match=r"_grouped_mm of ranks \(2, 2\)"):
        ReferenceModule(module)(a, b, torch.tensor([4, 8, 12], dtype=torch.int32))


@pytest.fixture
def cuda_histc_on_the_cpu():
    """torch's CUDA histc of integers, as a CPU kernel (the CPU's refuses integers): int64 arithmetic,
    ``(v - min) * bins / (max - min)`` truncated, ``max`` in the last bin, limits in the input type
    (``aten/src/ATen/native/cuda/SummaryOps.cu``), so the trace can record ``aten::histc`` of an
    ``int32`` tensor here."""
    def histc(x, bins, low, high):
        low, high = int(low), int(high)
        if low == high and x.numel():
            low, high = int(x.min()), int(x.max())
        if low == high:
            low, high = low - 1, high + 1
        counts = [0] * bins
        for v in x.reshape(-1).tolist():
            if low <= v <= high:
                counts[min((v - low) * bins // (high - low), bins - 1)] += 1
        return torch.tensor(counts, dtype=x.dtype)

    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Overriding a previously registered kernel": for this test only
        library.impl("histc", histc, "CPU")
    yield
    library._destroy()


@pytest.mark.parametrize("bins, low, high", [(4, 0, 3), (3, 2, 9), (5, -4, 4), (2, 1, 1)])
def test_histc_of_integers_counts_as_the_cuda_kernel(cuda_histc_on_the_cpu, bins, low, high):
    """transformers' grouped experts on CUDA: ``histc(expert_ids.int(), bins=E, min=0, max=E - 1)``,
    the tokens each expert got (``bincount``); other ranges with the kernel's integer arithmetic."""
    ids = torch.tensor([0, 0, 1, 3, 3, 3, 2, 0, -5, 9, 4, 8], dtype=torch.int32)
    module = OneOp(lambda ids: torch.histc(ids, bins=bins, min=low, max=high))
    out = ReferenceModule(module)(ids)
    want = module(ids)
    assert out.dtype == torch.int32 and torch.equal(out, want), f"{out.tolist()} != {want.tolist()}"
    if (bins, low, high) == (4, 0, 3):
        assert want.tolist() == torch.bincount(ids[(ids >= 0) & (ids <= 3)], minlength=4).tolist()
