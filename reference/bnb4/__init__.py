"""The bnb4 stage (docs/architecture.md): bitsandbytes-style 4-bit blockwise quantization.

``quantize(weight, block_size, quant_type)`` packs a ``[N, K]`` weight into the bytes and absmax
``com.microsoft::MatMulBnb4`` reads; ``dequantize`` undoes it. Both are vectorized torch and give
the bytes onnxruntime's own quantizer gives (tests/reference/bnb4).
"""
from reference.bnb4.quantize import QUANT_TYPES, FP4, NF4, Packed, dequantize, quantize
from reference.bnb4.tables import TABLES, code_values

__all__ = ["FP4", "NF4", "Packed", "QUANT_TYPES", "TABLES", "code_values", "dequantize", "quantize"]
