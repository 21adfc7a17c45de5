"""An op catalogue for pipelines, in the spirit of PyTorch's OpInfo: the torch ops transformer
training uses, each with a strategy of cases (shapes, dtype, attributes, which inputs require grad).

Cases come in *shape classes*, so a parameter of the op suite names what every one of its examples
exercises (a pipeline that can't handle empty tensors fails every ``empty`` example, under any seed):

- ``regular``: ranks 1-4, every side at least 1, broadcasting;
- ``empty``: at least one zero-size dimension in the first input;
- ``scalar``: every float input 0-d.

Edges a pipeline may get wrong on their own (a part size that doesn't divide the axis, fewer chunks
than asked, unbatched or label-smoothed cross entropy, a 1-D matmul operand, a matrix without rows
times a vector) are ops of their own for the same reason. A case is a plain value (:class:`OpCase`) that builds its own seeded inputs,
so a falsifying example reads as written and replays anywhere.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Sequence

import torch
import torch.nn.functional as F
from hypothesis import strategies as st

FLOAT_DTYPES = ("float32", "float64")
HALF_DTYPES = ("float16", "bfloat16")  # a case's inputs in half precision: what autocast promotes to float32 gets them
SHAPE_CLASSES = ("regular", "empty", "scalar")
MAX_SIDE = 3

# How an input's values are drawn: float ("float", "positive", "nonzero", "tail": in [-20, -6], where
# sigmoid-like functions saturate and only a relatively accurate kernel keeps their gradient), or not differentiable
# ("bool", "index:<bound>" integers in [0, bound), "class:<bound>" class labels).
Kind = str


@dataclasses.dataclass(frozen=True)
class Input:
    shape: tuple[int, ...]
    kind: Kind = "float"

    @property
    def differentiable(self) -> bool:
        return self.kind in ("float", "positive", "nonzero", "tail")


@dataclasses.dataclass(frozen=True)
class OpCase:
    """One call of a catalogue op: ``OPS[op].fn(*inputs, **attrs)``."""

    op: str
    inputs: tuple[Input, ...]
    attrs: tuple[tuple[str, Any], ...] = ()
    dtype: str = "float32"
    requires_grad: tuple[bool, ...] = ()  # per input; non-differentiable inputs are always False

    def call(self, *tensors: torch.Tensor):
        return OPS[self.op].fn(*tensors, **dict(self.attrs))

    def make_inputs(self, seed: int = 0, device: str = "cpu") -> tuple[torch.Tensor, ...]:
        """Seeded inputs; the float ones in ``dtype``, requiring grad as the case says."""
        generator = torch.Generator().manual_seed(seed)
        return tuple(_make(spec, self.dtype, generator).to(device).requires_grad_(grad)
                     for spec, grad in zip(self.inputs, self.requires_grad))


def _make(spec: Input, dtype: str, generator: torch.Generator) -> torch.Tensor:
    kind, _, bound = spec.kind.partition(":")
    if kind == "bool":
        return torch.randint(0, 2, spec.shape, generator=generator).bool()
    if kind in ("index", "class"):
        return torch.randint(0, int(bound), spec.shape, generator=generator)
    values = torch.randn(spec.shape, generator=generator, dtype=torch.float64)
    if kind == "positive":
        values = values.abs() + 0.5
    elif kind == "nonzero":
        values = values.sign() * (values.abs() + 0.5)
    elif kind == "tail":
        values = -(6 + 14 * torch.special.ndtr(values))  # uniform-ish over [-20, -6]
    return values.to(getattr(torch, dtype))


# ---- shape classes ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Shapes:
    """Shape builders of one shape class."""

    name: str

    def shape(self, min_dims: int = 0, max_dims: int = 4) -> st.SearchStrategy:
        """A shape of this class (``empty``: with a zero side)."""
        if self.name == "scalar":
            return st.just(())
        sides = st.integers(1 if self.name == "regular" else 0, MAX_SIDE)
        ranks = st.lists(sides, min_size=max(1, min_dims), max_size=max(1, max_dims)).map(tuple)
        return ranks if self.name == "regular" else ranks.flatmap(_with_a_zero)

    def side(self) -> st.SearchStrategy:
        """A size that isn't a tensor's own side (a matmul's inner size): never 0 outside ``empty``."""
        return st.integers(0 if self.name == "empty" else 1, MAX_SIDE)

    def broadcast(self, n: int) -> st.SearchStrategy:
        """``n`` shapes broadcasting to a shape of this class; the first is that shape itself."""
        return self.shape().flatmap(lambda full: st.tuples(st.just(full), *(_shrunk_to(full) for _ in range(n - 1))))


def _with_a_zero(shape: tuple[int, ...]) -> st.SearchStrategy:
    return st.integers(0, len(shape) - 1).map(lambda d: shape[:d] + (0,) + shape[d + 1:])


@st.composite
def _shrunk_to(draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to ``shape`` without growing it: some sides 1, some leading dims dropped
    (never all of them: a 0-d operand is the ``scalar`` class's)."""
    dropped = draw(st.integers(0, max(0, len(shape) - 1)))
    return tuple(1 if draw(st.booleans()) else side for side in shape[dropped:])


@st.composite
def _with_dim(draw, shape_strategy: st.SearchStrategy) -> tuple[tuple[int, ...], int]:
    """A shape of rank >= 1 and a dim of it, negative dims included."""
    shape = draw(shape_strategy)
    return shape, draw(st.integers(-len(shape), len(shape) - 1))


def _ins(shapes, kinds: Sequence[Kind]) -> tuple[Input, ...]:
    return tuple(Input(s, k) for s, k in zip(shapes, kinds))


# ---- case builders: (shape class) -> strategy of (inputs, attrs) --------------------------------------

def _unary(kind: Kind = "float", **attrs) -> Callable:
    def cases(sh: Shapes):
        return st.tuples(sh.shape().map(lambda s: (Input(s, kind),)), st.fixed_dictionaries(attrs))
    return cases


def _binary(kinds: Sequence[Kind] = ("float", "float")) -> Callable:
    return lambda sh: sh.broadcast(2).map(lambda ss: (_ins(ss, kinds), {}))


@st.composite
def _where(draw, sh):
    x, cond, y = draw(sh.broadcast(3))
    return (Input(cond, "bool"), Input(x), Input(y)), {}


@st.composite
def _masked_fill(draw, sh):
    x = draw(sh.shape())
    return (Input(x), Input(draw(_shrunk_to(x)), "bool")), {"value": draw(st.sampled_from([0.0, -1e4, 2.5]))}


@st.composite
def _matmul(draw, sh, vector: bool):
    """[..., n, k] @ [..., k, m] with broadcast batches; ``vector``: one operand 1-D ([k]).

    ``empty`` empties a batch dimension, never n, k or m: onnxruntime's MatMul leaves its output
    uninitialized when the contracted size is 0 (docs/architecture.md, "What the catalogue leaves
    out"), and the gradients of an empty n or m contract over it: such cases fail at random."""
    side = st.integers(1, MAX_SIDE)
    n, k, m = draw(side), draw(side), draw(side)
    batch = draw(st.lists(side, min_size=1 if sh.name == "empty" else 0, max_size=2).map(tuple))
    if sh.name == "empty":
        batch = (0, *batch[1:])
    a, b = (*batch, n, k), (*draw(_shrunk_to(batch)), k, m)
    if vector:
        a, b = draw(st.sampled_from([((k,), b), (a, (k,))]))
    return (Input(a), Input(b)), {}


@st.composite
def _matvec_empty_rows(draw, sh):
    """A matrix with no rows times a vector: [..., 0, k] @ [k]."""
    k = draw(st.integers(1, MAX_SIDE))
    return (Input((*draw(st.lists(st.integers(1, MAX_SIDE), max_size=2)), 0, k)), Input((k,))), {}


@st.composite
def _bmm(draw, sh):
    """``empty``: no batches (see :func:`_matmul` for why n, k and m stay)."""
    n, k, m = (draw(st.integers(1, MAX_SIDE)) for _ in range(3))
    b = 0 if sh.name == "empty" else draw(st.integers(1, MAX_SIDE))
    return (Input((b, n, k)), Input((b, k, m))), {}


@st.composite
def _linear(draw, sh):
    """``empty``: no rows (see :func:`_matmul` for why the features stay)."""
    k, m = draw(st.integers(1, MAX_SIDE)), draw(st.integers(1, MAX_SIDE))
    lead = draw(sh.shape(max_dims=2)) if sh.name == "empty" else draw(st.lists(st.integers(1, MAX_SIDE), max_size=2))
    x = (*lead, k)
    inputs = (Input(x), Input((m, k)))
    return (inputs + (Input((m,)),) if draw(st.booleans()) else inputs), {}


# Einsum as models write it: attention pooling, attention scores, a matrix product, a batch outer
# product, a sum over an axis no other operand has, an ellipsis, a dot product, three operands.
EINSUM_EQUATIONS = ("bt,btd->bd", "bhqd,bhkd->bhqk", "ij,jk->ik", "bi,bj->bij", "ij,j->i", "...d,de->...e", "i,i->",
                    "bij,bjk,bk->bi")


@st.composite
def _einsum(draw, sh):
    equation = draw(st.sampled_from(EINSUM_EQUATIONS))
    sizes = {letter: draw(st.integers(1, MAX_SIDE)) for letter in sorted(set(equation) - set(",->."))}
    ellipsis = tuple(draw(st.lists(st.integers(1, MAX_SIDE), max_size=2)))
    operands = equation.split("->")[0].split(",")
    shapes = [(ellipsis if s.startswith("...") else ()) + tuple(sizes[c] for c in s.removeprefix("...")) for s in operands]
    return tuple(Input(shape) for shape in shapes), {"equation": equation}


def _along_dim(**attrs) -> Callable:
    @st.composite
    def cases(draw, sh):
        shape, dim = draw(_with_dim(sh.shape(min_dims=1)))
        return (Input(shape),), {"dim": dim, **{k: draw(v) for k, v in attrs.items()}}
    return cases


@st.composite
def _layer_norm(draw, sh):
    shape = draw(Shapes("regular").shape(min_dims=1))
    shape = (*shape[:-1], max(2, shape[-1]))  # normalized over >= 2 elements (over one it is constant)
    normalized = shape[len(shape) - draw(st.integers(1, len(shape))):]
    if sh.name == "empty":
        shape = (0, *shape)  # an empty batch in front of what is normalized
    inputs = [Input(shape)]
    affine = draw(st.sampled_from(["none", "weight", "both"]))
    inputs += [Input(normalized)] * (("none", "weight", "both").index(affine))
    return tuple(inputs), {"normalized_shape": normalized, "eps": draw(st.sampled_from([1e-5, 1e-3]))}


@st.composite
def _embedding(draw, sh):
    rows, width = draw(st.integers(1, 5)), draw(st.integers(1, MAX_SIDE))
    return (Input(draw(sh.shape(max_dims=2)), f"index:{rows}"), Input((rows, width))), {}


@st.composite
def _gather(draw, sh):
    shape, dim = draw(_with_dim(Shapes("regular").shape(min_dims=1)))
    axis = dim % len(shape)
    index = tuple(draw(st.integers(1, side)) if d != axis else draw(st.integers(1, MAX_SIDE)) for d, side in enumerate(shape))
    if sh.name == "empty":
        index = index[:axis] + (0,) + index[axis + 1:]
    return (Input(shape), Input(index, f"index:{shape[dim]}")), {"dim": dim}


@st.composite
def _topk(draw, sh):
    shape, dim = draw(_with_dim(sh.shape(min_dims=1)))
    k = draw(st.integers(min(1, shape[dim]), shape[dim]))
    return (Input(shape),), {"dim": dim, "k": k, "largest": draw(st.booleans())}


@st.composite
def _index_select(draw, sh):
    shape, dim = draw(_with_dim(Shapes("regular").shape(min_dims=1)))
    count = 0 if sh.name == "empty" else draw(st.integers(1, 4))
    return (Input(shape), Input((count,), f"index:{shape[dim]}")), {"dim": dim}


@st.composite
def _cat(draw, sh):
    shape, dim = draw(_with_dim(sh.shape(min_dims=1)))
    axis = dim % len(shape)
    parts = [shape] + [shape[:axis] + (draw(st.integers(1, MAX_SIDE)),) + shape[axis + 1:]
                       for _ in range(draw(st.integers(0, 2)))]
    return tuple(Input(p) for p in parts), {"dim": dim}


@st.composite
def _stack(draw, sh):
    shape = draw(sh.shape(max_dims=3))
    return tuple(Input(shape) for _ in range(draw(st.integers(1, 3)))), {"dim": draw(st.integers(-len(shape) - 1, len(shape)))}


@st.composite
def _reshape(draw, sh):
    shape = draw(sh.shape())
    numel = math.prod(shape)
    targets = [tuple(reversed(shape)), (1, *shape), (numel, 1)] + ([(-1,)] if numel else [])
    return (Input(shape),), {"shape": draw(st.sampled_from(targets))}


@st.composite
def _transpose(draw, sh):
    shape = draw(sh.shape(min_dims=1))
    rank = len(shape)
    return (Input(shape),), {"dim0": draw(st.integers(-rank, rank - 1)), "dim1": draw(st.integers(-rank, rank - 1))}


@st.composite
def _permute(draw, sh):
    shape = draw(sh.shape())
    return (Input(shape),), {"dims": tuple(draw(st.permutations(range(len(shape)))))}


@st.composite
def _expand(draw, sh):
    shape = draw(sh.shape(max_dims=3))
    grown = tuple(draw(st.integers(1, MAX_SIDE)) if side == 1 else side for side in shape)
    lead = draw(st.lists(st.integers(1, MAX_SIDE), max_size=1))
    return (Input(shape),), {"size": (*lead, *grown)}


@st.composite
def _slice(draw, sh):
    shape, dim = draw(_with_dim(sh.shape(min_dims=1)))
    side = shape[dim]
    start = draw(st.integers(-side - 1, side + 1))
    stop = draw(st.none() | st.integers(-side - 1, side + 1))
    return (Input(shape),), {"dim": dim, "start": start, "stop": stop, "step": draw(st.integers(1, 2))}


@st.composite
def _unsqueeze(draw, sh):
    shape = draw(sh.shape(max_dims=3))
    return (Input(shape),), {"dim": draw(st.integers(-len(shape) - 1, len(shape)))}


@st.composite
def _reduce(draw, sh):
    shape = draw(sh.shape())
    dims = None
    if shape and draw(st.booleans()):
        dims = tuple(draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True)))
    return (Input(shape),), {"dim": dims, "keepdim": draw(st.booleans())}


@st.composite
def _triangle(draw, sh):
    return (Input(draw(sh.shape(min_dims=2))),), {"diagonal": draw(st.integers(-2, 2))}


def _chunk(x, dim, chunks):
    return torch.chunk(x, chunks, dim)


@st.composite
def _chunk_cases(draw, sh, fewer: bool):
    """chunk into exactly ``chunks`` parts, or (``fewer``) into fewer parts than asked, as torch does
    when the axis is too short for them (4 into 3 gives 2 parts of 2)."""
    shape, dim = draw(_with_dim(sh.shape(min_dims=1)))
    chunks = 3 if fewer else draw(st.integers(1, 3))
    side = draw(st.sampled_from([2, 4])) if fewer else chunks * draw(st.integers(1, 2))
    shape = tuple(side if d == dim % len(shape) else s for d, s in enumerate(shape))
    return (Input(shape),), {"dim": dim, "chunks": chunks}


def _split(x, dim, size):
    return torch.split(x, size, dim)


@st.composite
def _split_cases(draw, sh, axis: str):
    """split along an axis whose size the part size divides, does not divide, or which is empty."""
    shape, dim = draw(_with_dim(sh.shape(min_dims=1)))
    size = draw(st.integers(2, MAX_SIDE)) if axis == "uneven" else draw(st.integers(1, MAX_SIDE))
    side = {"divisible": lambda: size * draw(st.integers(1, 2)),
            "uneven": lambda: size * draw(st.integers(0, 1)) + draw(st.integers(1, size - 1)),
            "empty": lambda: 0}[axis]()
    shape = tuple(side if d == dim % len(shape) else s for d, s in enumerate(shape))
    return (Input(shape),), {"dim": dim, "size": size}


def _cross_entropy_call(logits, target, reduction, label_smoothing):
    return F.cross_entropy(logits, target, reduction=reduction, label_smoothing=label_smoothing)


@st.composite
def _cross_entropy(draw, sh, label_smoothing: float = 0.0, batched: bool = True):
    """Logits [N, C] or [N, C, d] (batched), or [C] with a 0-d target (unbatched)."""
    classes = draw(st.integers(1, 4))
    batch = draw(st.sampled_from([(1,), (2,), (3,), (2, 2)])) if batched else ()
    logits = (classes,) if not batch else (batch[0], classes, *batch[1:])
    return (Input(logits), Input(batch, f"class:{classes}")), {
        "reduction": draw(st.sampled_from(["mean", "sum", "none"])), "label_smoothing": label_smoothing}


@st.composite
def _pad(draw, sh, mode: str):
    """Pads on the last 1-3 axes. constant: any rank, crops (negative pads) leaving at least one
    element, an empty tensor's zero on an axis it doesn't pad (torch 2.4.1's constant_pad_nd refuses
    any padded axis of size 0, forward or backward); reflect (each pad below its side), replicate and
    circular (at most the side): torch pads the last k axes of a rank k+1 or k+2 input only
    (circular: k+2; torch 2.13's exporter puts an unbatched input's Slice/Concat on the wrong axes)."""
    if mode == "constant":
        shape = draw(Shapes("regular").shape(min_dims=1 if sh.name == "regular" else 2))
        padded = draw(st.integers(1, min(3, len(shape) - (sh.name == "empty"))))
        if sh.name == "empty":
            zero = draw(st.integers(0, len(shape) - padded - 1))
            shape = shape[:zero] + (0,) + shape[zero + 1:]
    else:
        padded = draw(st.integers(1, 3))
        shape = draw(sh.shape(min_dims=padded + 1 + (mode == "circular"), max_dims=padded + 2))
    low = {"constant": lambda side: -((side - 1) // 2)}.get(mode, lambda side: 0)
    high = {"reflect": lambda side: min(2, side - 1), "circular": lambda side: min(2, side)}.get(mode, lambda side: 2)
    pad = tuple(draw(st.integers(low(side), high(side))) for side in reversed(shape[-padded:]) for _ in range(2))
    attrs = {"pad": pad, "mode": mode}
    if mode == "constant":
        attrs["value"] = draw(st.sampled_from([0.0, 1.5]))
    return (Input(shape),), attrs


@st.composite
def _pixel_shuffle(draw, sh, unshuffle: bool):
    """(N, C·r², H, W) for the shuffle, (N, C, H·r, W·r) for the unshuffle, r in 1-3 (torch's
    exporter refuses other ranks)."""
    factor, batch, channels = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    height, width = draw(st.integers(1, MAX_SIDE)), draw(st.integers(1, MAX_SIDE))
    if unshuffle:
        shape = (batch, channels, height * factor, width * factor)
    else:
        shape = (batch, channels * factor * factor, height, width)
    return (Input(shape),), {"factor": factor}


def _index_slice(x, dim, start, stop, step):
    return x[(slice(None),) * (dim % x.dim()) + (slice(start, stop, step),)]


def _reduce_call(fn):
    return lambda x, dim, keepdim: fn(x) if dim is None else fn(x, dim=dim, keepdim=keepdim)


def _affine_layer_norm(x, *affine, normalized_shape, eps):
    return F.layer_norm(x, normalized_shape, *affine, eps=eps)


# ---- the catalogue -------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Op:
    name: str
    fn: Callable
    cases: Callable[[Shapes], st.SearchStrategy]  # shape class -> strategy of (inputs, attrs)
    classes: tuple[str, ...] = SHAPE_CLASSES       # the shape classes the op has cases of


ALL, NOT_SCALAR, REGULAR = SHAPE_CLASSES, ("regular", "empty"), ("regular",)

OPS: dict[str, Op] = {op.name: op for op in (
    Op("add", torch.add, _binary()),
    Op("sub", torch.sub, _binary()),
    Op("mul", torch.mul, _binary()),
    Op("div", torch.div, _binary(("float", "nonzero"))),
    Op("pow_scalar", lambda x, exponent: torch.pow(x, exponent), _unary("positive", exponent=st.sampled_from([2, 3, 0.5, -1.5]))),
    Op("pow", torch.pow, _binary(("positive", "float"))),
    Op("where", torch.where, _where),
    Op("masked_fill", lambda x, mask, value: x.masked_fill(mask, value), _masked_fill),
    Op("matmul", torch.matmul, lambda sh: _matmul(sh, vector=False), NOT_SCALAR),
    Op("matmul_vector", torch.matmul, lambda sh: _matmul(sh, vector=True), REGULAR),
    Op("matvec_empty_rows", torch.matmul, _matvec_empty_rows, REGULAR),
    Op("bmm", torch.bmm, _bmm, NOT_SCALAR),
    Op("einsum", lambda *xs, equation: torch.einsum(equation, *xs), _einsum, REGULAR),
    Op("linear", F.linear, _linear, NOT_SCALAR),
    Op("softmax", lambda x, dim: torch.softmax(x, dim), _along_dim(), NOT_SCALAR),
    Op("log_softmax", lambda x, dim: torch.log_softmax(x, dim), _along_dim(), NOT_SCALAR),
    Op("layer_norm", _affine_layer_norm, _layer_norm, NOT_SCALAR),
    Op("gelu", F.gelu, _unary()),
    Op("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), _unary()),
    Op("tanh", torch.tanh, _unary()),
    Op("sigmoid", torch.sigmoid, _unary()),
    Op("sigmoid_tail", torch.sigmoid, _unary("tail"), REGULAR),
    Op("silu_tail", F.silu, _unary("tail"), REGULAR),
    Op("relu", torch.relu, _unary()),
    Op("clamp", lambda x, bounds: torch.clamp(x, *bounds), _unary(bounds=st.sampled_from([(-0.5, 0.5), (None, 0.3), (-0.2, None)]))),
    Op("maximum", torch.maximum, _binary()),
    Op("minimum", torch.minimum, _binary()),
    Op("neg", torch.neg, _unary()),
    Op("exp", torch.exp, _unary()),
    Op("log", torch.log, _unary("positive")),
    Op("sqrt", torch.sqrt, _unary("positive")),
    Op("rsqrt", torch.rsqrt, _unary("positive")),
    Op("dropout_p0", lambda x: F.dropout(x, 0.0, training=True), _unary()),
    Op("embedding", F.embedding, _embedding, NOT_SCALAR),
    Op("gather", lambda x, index, dim: torch.gather(x, dim, index), _gather, NOT_SCALAR),
    Op("index_select", lambda x, index, dim: torch.index_select(x, dim, index), _index_select, NOT_SCALAR),
    Op("cat", lambda *xs, dim: torch.cat(xs, dim), _cat, NOT_SCALAR),
    Op("stack", lambda *xs, dim: torch.stack(xs, dim), _stack),
    Op("split", _split, lambda sh: _split_cases(sh, "divisible"), REGULAR),
    Op("split_uneven", _split, lambda sh: _split_cases(sh, "uneven"), REGULAR),
    Op("split_empty_axis", _split, lambda sh: _split_cases(sh, "empty"), REGULAR),
    Op("chunk", _chunk, lambda sh: _chunk_cases(sh, fewer=False), REGULAR),
    Op("chunk_fewer", _chunk, lambda sh: _chunk_cases(sh, fewer=True), REGULAR),
    Op("reshape", lambda x, shape: x.reshape(shape), _reshape),
    Op("view", lambda x, shape: x.view(shape), _reshape),
    Op("transpose", lambda x, dim0, dim1: x.transpose(dim0, dim1), _transpose, NOT_SCALAR),
    Op("permute", lambda x, dims: x.permute(dims), _permute),
    Op("expand", lambda x, size: x.expand(size), _expand),
    Op("slice", _index_slice, _slice, NOT_SCALAR),
    Op("unsqueeze", lambda x, dim: x.unsqueeze(dim), _unsqueeze),
    Op("squeeze", lambda x, dim: x.squeeze(dim), _along_dim(), NOT_SCALAR),
    Op("sum", _reduce_call(torch.sum), _reduce),
    Op("mean", _reduce_call(torch.mean), _reduce, ("regular", "scalar")),
    Op("cumsum", lambda x, dim: torch.cumsum(x, dim), _along_dim(), NOT_SCALAR),
    Op("topk", lambda x, dim, k, largest: torch.topk(x, k, dim, largest=largest).values, _topk, NOT_SCALAR),
    Op("tril", lambda x, diagonal: torch.tril(x, diagonal), _triangle, NOT_SCALAR),
    Op("triu", lambda x, diagonal: torch.triu(x, diagonal), _triangle, NOT_SCALAR),
    Op("cross_entropy", _cross_entropy_call, _cross_entropy, REGULAR),
    Op("cross_entropy_unbatched", _cross_entropy_call, lambda sh: _cross_entropy(sh, batched=False), REGULAR),
    Op("cross_entropy_label_smoothing", _cross_entropy_call, lambda sh: _cross_entropy(sh, 0.1), REGULAR),
    Op("pad", F.pad, lambda sh: _pad(sh, "constant"), NOT_SCALAR),
    Op("pad_reflect", F.pad, lambda sh: _pad(sh, "reflect"), REGULAR),
    Op("pad_replicate", F.pad, lambda sh: _pad(sh, "replicate"), REGULAR),
    Op("pad_circular", F.pad, lambda sh: _pad(sh, "circular"), REGULAR),
    Op("pixel_shuffle", lambda x, factor: F.pixel_shuffle(x, factor), lambda sh: _pixel_shuffle(sh, False), REGULAR),
    Op("pixel_unshuffle", lambda x, factor: F.pixel_unshuffle(x, factor), lambda sh: _pixel_shuffle(sh, True), REGULAR),
)}


def parameters(dtypes: Sequence[str] = FLOAT_DTYPES) -> list[tuple[str, str, str]]:
    """Every (op, dtype, shape class) the catalogue has cases of: the op suite's parameters. float64
    runs the regular and scalar classes (empty tensors hold no value to be precise about)."""
    return [(op.name, dtype, cls) for op in OPS.values() for dtype in dtypes for cls in op.classes
            if dtype != "float64" or cls != "empty"]


@st.composite
def op_cases(draw, op: str, dtype: str = "float32", shapes: str = "regular") -> OpCase:
    """One case of catalogue op ``op`` in shape class ``shapes``: shapes and attributes from its
    strategy, and which differentiable inputs require grad (at least one)."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}; valid: {', '.join(OPS)}")
    if shapes not in OPS[op].classes:
        raise ValueError(f"op {op!r} has no {shapes!r} cases; it has: {', '.join(OPS[op].classes)}")
    if dtype not in FLOAT_DTYPES + HALF_DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; valid: {', '.join(FLOAT_DTYPES + HALF_DTYPES)}")
    inputs, attrs = draw(OPS[op].cases(Shapes(shapes)))
    differentiable = [i for i, spec in enumerate(inputs) if spec.differentiable]
    chosen = draw(st.sets(st.sampled_from(differentiable), min_size=1)) if differentiable else set()
    return OpCase(op, tuple(inputs), tuple(attrs.items()), dtype, tuple(i in chosen for i in range(len(inputs))))
