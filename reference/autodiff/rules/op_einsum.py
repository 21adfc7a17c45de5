import torch

from reference.autodiff.errors import UnsupportedOpError
from reference.autodiff.registry import gradient_rule
from reference.autodiff.samples import Sample, normal


@gradient_rule("Einsum", samples=(
    Sample(lambda a, b: torch.einsum("bij,bjk->bik", a, b), (normal(2, 3, 4), normal(2, 4, 5)), wrt=(0, 1),
           more=((normal(1, 2, 3), normal(1, 3, 2)),), name="batched_matmul"),
    Sample(lambda a, b: torch.einsum("ij,k->ik", a, b), (normal(3, 4), normal(5)), wrt=(0, 1), name="summed_letter"),
))
def einsum_grad(ctx, node):
    """dXᵢ = einsum(dY and the other operands -> Xᵢ's subscripts): every product term of Y that
    holds Xᵢ[...], summed. A letter of Xᵢ found in no other operand nor Y was summed over in
    forward: dXᵢ is the same along it (Unsqueeze, then Expand to Xᵢ's shape). An ellipsis becomes
    letters of its own where every operand with one, and Y, give it the same rank; a letter repeated
    within one operand (a diagonal) is refused by name."""
    operands = [node.input(k) for k in range(len(node.proto.input))]
    inputs, output = _subscripts(ctx, node, operands)
    grads = {}
    for i, mine in enumerate(inputs):
        if not node.wants(i):
            continue
        others = [s for j, s in enumerate(inputs) if j != i]
        seen = set(output).union(*others)
        kept = "".join(letter for letter in mine if letter in seen)
        equation = ",".join([output, *others]) + "->" + kept
        grad = ctx.op("Einsum", node.grad(), *(ctx.forward(operands[j]) for j in range(len(operands)) if j != i),
                      equation=equation)
        summed = [axis for axis, letter in enumerate(mine) if letter not in seen]
        if summed:
            grad = ctx.op("Expand", ctx.op("Unsqueeze", grad, ctx.ints(summed)), ctx.shape(operands[i]))
        grads[i] = grad
    return grads


def _subscripts(ctx, node, operands) -> tuple[list[str], str]:
    equation = node.attr("equation").replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    inputs = lhs.split(",")
    if not arrow:  # implicit output: the letters used once, in alphabetical order (and a leading ellipsis)
        letters = "".join(inputs).replace("...", "")
        rhs = ("..." if "..." in lhs else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ellipsis_ranks = {ctx.rank(name) - len(s.replace("...", "")) for name, s in zip(operands, inputs) if "..." in s}
    if len(ellipsis_ranks) > 1:
        raise UnsupportedOpError(f"Einsum({equation}: ellipses of different ranks)", node.name, ["Einsum"])
    spare = "".join(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in equation)[: next(iter(ellipsis_ranks), 0)]
    inputs, rhs = [s.replace("...", spare) for s in inputs], rhs.replace("...", spare)
    if any(len(set(s)) != len(s) for s in inputs):
        raise UnsupportedOpError(f"Einsum({equation}: a letter repeated in one operand)", node.name, ["Einsum"])
    return inputs, rhs
