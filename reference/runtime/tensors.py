"""Zero-copy hand-over of tensors between torch and onnxruntime through DLPack.

DLPack keeps device memory where it is (no host round-trip on CUDA) and covers bfloat16, which
numpy cannot carry. onnxruntime's converter rejects DLPack's bool code, so bool travels as uint8
with the bool flag and comes back as uint8 that we view as bool.
"""
from __future__ import annotations

import torch
from onnxruntime.capi import _pybind_state as C


def to_ort(tensor: torch.Tensor) -> C.OrtValue:
    tensor = tensor.detach().contiguous()
    if tensor.dtype == torch.bool:
        return C.OrtValue.from_dlpack(tensor.view(torch.uint8).__dlpack__(), True)
    return C.OrtValue.from_dlpack(tensor.__dlpack__(), False)


def from_ort(value: C.OrtValue) -> torch.Tensor:
    tensor = torch.from_dlpack(value.to_dlpack())
    return tensor.view(torch.bool) if value.data_type() == "tensor(bool)" else tensor
