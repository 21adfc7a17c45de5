"""Ops whose outputs carry no gradient: shapes, comparisons, logic, indices, integer maths, random draws.

Registered here so a differentiable path merely ends at them instead of failing as unsupported.
Sign, the rounding ops and Bernoulli are not here: PyTorch gives them a zero gradient (rules/zero_gradient.py).
"""
from reference.autodiff.registry import non_differentiable

non_differentiable(
    "Shape", "Size", "Constant", "ConstantOfShape", "Range", "EyeLike", "OneHot",
    "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "IsNaN", "IsInf",
    "Not", "And", "Or", "Xor", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot",
    "ArgMax", "ArgMin", "NonZero",
    "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial",
)
