"""A 4-bit (QLoRA) linear layer with bitsandbytes' semantics, and the swap that makes a model QLoRA.

``y = x @ dequant(W)ᵀ + b + scaling · (x @ Aᵀ) @ Bᵀ``. The packed weight is frozen (a uint8
``[(N*K+1)//2, 1]`` parameter without grad, as bitsandbytes' ``Params4bit``); only the input gets a
gradient through it (``dY @ dequant(W)``, what bitsandbytes' ``MatMul4Bit`` computes), and only the
packed weight and absmax are saved for backward. The bias and the LoRA adapters train.

The layout is the one ``MatMulBnb4`` reads (docs/architecture.md, "bnb4"); the code book and the
quantizer are written here, not imported from ``reference/``: this layer is the eager oracle the
reference pipeline is judged against.

``kernel`` picks who computes the 4-bit product in eager: ``"ortcheck"`` (below; exports to
``com.microsoft::MatMulBnb4``) or ``"bitsandbytes"`` (bitsandbytes' ``MatMul4Bit`` autograd
Function, which ORTModule recognises and exports, #18131). :func:`use_kernel` switches a whole model.
"""
from __future__ import annotations

import contextlib
import math
from typing import Iterator

import numpy as np
import torch
from torch import nn

FP4, NF4 = 0, 1
QUANT_TYPE_NAMES = {FP4: "fp4", NF4: "nf4"}
KERNELS = ("ortcheck", "bitsandbytes")
# The block sizes each kernel computes with: onnxruntime's CPU MatMulBnb4, and bitsandbytes.
ORT_CPU_BLOCK_SIZES = (16, 32, 64, 128, 256)
BITSANDBYTES_BLOCK_SIZES = (32, 64, 128, 256, 512, 1024, 2048, 4096)

# NF4, float32 bit patterns by code (bitsandbytes' normal-quantile table). FP4 follows from its
# definition: a sign bit (bit 3) over the e2m1 magnitudes 0, 1/16, 8, 12, 4, 6, 2, 3, divided by 12.
_NF4_BITS = (0xBF800000, 0xBF3239B1, 0xBF066B30, 0xBECA32A0, 0xBE91A24D, 0xBE3D353F, 0xBDBA7871, 0x00000000,
             0x3DA2FAFF, 0x3E24CAE3, 0x3E7C04DD, 0x3EAD033A, 0x3EE1A4B8, 0x3F1007AB, 0x3F3913B3, 0x3F800000)
_FP4_MAGNITUDES = np.array([0, 1 / 16, 8, 12, 4, 6, 2, 3], dtype=np.float64) / 12
CODE_BOOKS = {
    NF4: torch.from_numpy(np.array(_NF4_BITS, dtype=np.uint32).view(np.float32).copy()),
    FP4: torch.from_numpy(np.concatenate([_FP4_MAGNITUDES, -_FP4_MAGNITUDES]).astype(np.float32)),
}
_ZERO_CODES = {quant_type: int((book == 0).nonzero()[0]) for quant_type, book in CODE_BOOKS.items()}  # of +0


def code_book(quant_type: int, like: torch.Tensor) -> torch.Tensor:
    """``CODE_BOOKS[quant_type]`` in ``like``'s dtype and on its device: the tables live on the CPU,
    the codes they are indexed with on the layer's device."""
    return CODE_BOOKS[quant_type].to(device=like.device, dtype=like.dtype)


def quantize_4bit(weight: torch.Tensor, block_size: int, quant_type: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(packed uint8 ``[(N*K+1)//2]``, float32 absmax per block) of a ``[N, K]`` weight.

    Each value gets the code whose table entry is nearest to ``value / absmax`` in float64 (the
    first such code on a tie). Any valid bytes serve a layer: what it computes is defined by the
    bytes, and byte-exactness against onnxruntime's quantizer is the reference quantizer's test.
    """
    flat = weight.detach().to(torch.float32).reshape(-1)
    numel = flat.numel()
    blocks = -(-numel // block_size)
    padded = torch.nn.functional.pad(flat, (0, blocks * block_size - numel)).view(blocks, block_size)
    absmax = padded.abs().amax(dim=1)
    normalized = (padded.double() / torch.where(absmax == 0, 1.0, absmax.double())[:, None]).reshape(-1)
    table = code_book(quant_type, normalized)
    codes = (normalized[:, None] - table[None, :]).abs().argmin(dim=1).to(torch.uint8)
    codes[numel:] = _ZERO_CODES[quant_type]  # padding
    codes = codes[:numel + numel % 2].view(-1, 2)
    return (codes[:, 0] << 4) | codes[:, 1], absmax


def dequantize_4bit(data: torch.Tensor, absmax: torch.Tensor, shape: tuple[int, int], block_size: int,
                    quant_type: int) -> torch.Tensor:
    """The ``[N, K]`` weight in absmax's dtype: ``code_book[code] * absmax[block]``."""
    n, k = shape
    flat = data.reshape(-1)
    codes = torch.stack([flat >> 4, flat & 0xF], dim=1).reshape(-1)[:n * k].long()
    values = code_book(quant_type, absmax)[codes]
    return (values * absmax.repeat_interleave(block_size)[:n * k]).view(n, k)


@contextlib.contextmanager
def _untraced() -> Iterator[None]:
    """Keep the TorchScript tracer out of the forward's body: ``symbolic`` is what exports, and
    tracing the dequantization of a second chained layer fails inside torch (``unordered_map::at``,
    torch 2.13)."""
    state = torch._C._get_tracing_state()
    torch._C._set_tracing_state(None)
    try:
        yield
    finally:
        torch._C._set_tracing_state(state)


class MatMul4Bit(torch.autograd.Function):
    """``x @ dequant(W)ᵀ`` with bitsandbytes' backward: a gradient for x only, from the packed weight."""

    @staticmethod
    def forward(ctx, x, data, absmax, shape, block_size, quant_type, training):
        ctx.save_for_backward(data, absmax)
        ctx.meta = (shape, block_size, quant_type)
        with _untraced():
            return x @ dequantize_4bit(data, absmax.to(x.dtype), shape, block_size, quant_type).t()

    @staticmethod
    def backward(ctx, grad):
        data, absmax = ctx.saved_tensors
        grad_x = grad @ dequantize_4bit(data, absmax.to(grad.dtype), *ctx.meta) if ctx.needs_input_grad[0] else None
        return grad_x, None, None, None, None, None, None

    @staticmethod
    def symbolic(g, x, data, absmax, shape, block_size, quant_type, training):
        half = {"Half": torch.float16, "BFloat16": torch.bfloat16}.get(x.type().scalarType())
        if half is None and x.type().scalarType() == "Float" and (half := _autocast_dtype()) is not None:
            x = g.op("Cast", x, to_i=_ONNX_HALF_TYPES[half])  # on autocast's list: eager computes it in the region's dtype
        if half is not None:  # the scales in x's dtype, as forward's ``absmax.to(x.dtype)``
            absmax = g.op("Cast", absmax, to_i=_ONNX_HALF_TYPES[half])
        flat = g.op("Reshape", data, g.op("Constant", value_t=torch.tensor([-1], dtype=torch.int64)))
        y = g.op("com.microsoft::MatMulBnb4", x, flat, absmax, K_i=shape[1], N_i=shape[0], block_size_i=block_size,
                 quant_type_i=quant_type, training_mode_i=int(training))
        return y


_ONNX_HALF_TYPES = {torch.float16: 10, torch.bfloat16: 16}  # onnx.TensorProto.FLOAT16, BFLOAT16


def _autocast_dtype() -> torch.dtype | None:
    """The dtype of the autocast region the export runs in (None: none)."""
    for device in ("cpu", "cuda"):
        if torch.is_autocast_enabled(device):
            return torch.get_autocast_dtype(device)
    return None


def _bitsandbytes_matmul(x: torch.Tensor, layer: "Linear4Bit") -> torch.Tensor:
    """bitsandbytes' ``MatMul4Bit`` Function, called as ``matmul_4bit`` does when a gradient is needed.

    ``matmul_4bit`` itself (0.50.2) skips the Function when no gradient is needed, calling its
    kernel op directly, and exporters trace under no_grad: ORTModule 1.19.2 then never sees the
    Function it converts (the finding ``ortmodule.bnb4.matmul_4bit_bypass``).
    """
    from bitsandbytes.autograd._functions import MatMul4Bit as BitsandbytesMatMul4Bit
    from bitsandbytes.functional import QuantState

    state = QuantState(absmax=layer.absmax, shape=torch.Size(layer.shape), code=code_book(layer.quant_type, layer.absmax),
                       blocksize=layer.block_size, quant_type=QUANT_TYPE_NAMES[layer.quant_type], dtype=x.dtype)
    return BitsandbytesMatMul4Bit.apply(x, layer.weight, None, None, state)


class Linear4Bit(nn.Module):
    """A frozen 4-bit ``[out, in]`` weight, an optional bias, optional LoRA adapters (rank, alpha).

    The bias is added outside the 4-bit product (not passed into it), so ORTModule's exporter, which
    converts only bias-free ``MatMul4Bit`` calls, sees every layer. ``packed_as`` keeps the packed
    weight as a frozen parameter (bitsandbytes' ``Params4bit``) or as a buffer (as quantizers that
    store codes beside the model do): a pipeline must not ask a gradient of either.
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None, block_size: int = 64,
                 quant_type: int = NF4, lora_rank: int = 0, lora_alpha: float = 1.0, kernel: str = "ortcheck",
                 packed_as: str = "parameter"):
        super().__init__()
        if quant_type not in CODE_BOOKS:
            raise ValueError(f"unknown quant_type {quant_type!r}; valid: 0 (FP4), 1 (NF4)")
        self.shape = tuple(weight.shape)
        self.block_size, self.quant_type = block_size, quant_type
        data, absmax = quantize_4bit(weight, block_size, quant_type)
        if packed_as == "buffer":
            self.register_buffer("weight", data.view(-1, 1))
        elif packed_as == "parameter":
            self.weight = nn.Parameter(data.view(-1, 1), requires_grad=False)
        else:
            raise ValueError(f"unknown packed_as {packed_as!r}; valid: parameter, buffer")
        self.register_buffer("absmax", absmax)
        self.bias = None if bias is None else nn.Parameter(bias.detach().clone().float())
        self.lora_rank, self.scaling = lora_rank, (lora_alpha / lora_rank if lora_rank else 0.0)
        if lora_rank:
            out_features, in_features = self.shape
            self.lora_a = nn.Parameter(torch.empty(lora_rank, in_features))
            nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
            # Non-zero (unlike LoRA's zero init) so that every gradient is non-trivial from step one.
            self.lora_b = nn.Parameter(torch.randn(out_features, lora_rank) * 0.02)
        self.kernel = kernel

    @property
    def kernel(self) -> str:
        return self._kernel

    @kernel.setter
    def kernel(self, name: str) -> None:
        if name not in KERNELS:
            raise ValueError(f"unknown 4-bit kernel {name!r}; valid: {', '.join(KERNELS)}")
        self._kernel = name

    @classmethod
    def from_linear(cls, linear: nn.Linear, **kwargs) -> "Linear4Bit":
        return cls(linear.weight.detach(), None if linear.bias is None else linear.bias.detach(), **kwargs)

    def dequantized(self) -> torch.Tensor:
        return dequantize_4bit(self.weight, self.absmax, self.shape, self.block_size, self.quant_type)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._kernel == "bitsandbytes":
            y = _bitsandbytes_matmul(x, self)
        else:
            y = MatMul4Bit.apply(x, self.weight, self.absmax, self.shape, self.block_size, self.quant_type,
                                 self.training)
        if self.bias is not None:
            y = y + self.bias
        if self.lora_rank:
            y = y + self.scaling * ((x @ self.lora_a.t()) @ self.lora_b.t())
        return y

    def extra_repr(self) -> str:
        return (f"in_features={self.shape[1]}, out_features={self.shape[0]}, bias={self.bias is not None}, "
                f"block_size={self.block_size}, quant_type={QUANT_TYPE_NAMES[self.quant_type]}, "
                f"lora_rank={self.lora_rank}, kernel={self._kernel}"
                + (", packed_as=buffer" if "weight" in self._buffers else ""))


def quantize_linears(module: nn.Module, block_size: int = 64, quant_type: int = NF4, lora_rank: int = 0,
                     lora_alpha: float = 1.0, freeze_others: bool = True) -> nn.Module:
    """QLoRA in place: every ``nn.Linear`` becomes a :class:`Linear4Bit` (its bias kept, adapters
    added) and, with ``freeze_others``, every other parameter stops training: the base is frozen,
    only biases of the 4-bit layers and the adapters learn."""
    if freeze_others:
        for parameter in module.parameters():
            parameter.requires_grad_(False)
    for name, child in list(module.named_children()):
        if isinstance(child, nn.Linear):
            setattr(module, name, Linear4Bit.from_linear(child, block_size=block_size, quant_type=quant_type,
                                                         lora_rank=lora_rank, lora_alpha=lora_alpha))
        else:
            quantize_linears(child, block_size, quant_type, lora_rank, lora_alpha, freeze_others=False)
    return module


def use_kernel(module: nn.Module, kernel: str) -> nn.Module:
    """Every :class:`Linear4Bit` in ``module`` computes with ``kernel`` from now on."""
    for layer in module.modules():
        if isinstance(layer, Linear4Bit):
            layer.kernel = kernel
    return module
