from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.op_cast import cast_grad


# No samples: tests/reference/autodiff/test_rule_samples.py (EXEMPT) says why.
@gradient_rule("CastLike", samples=())
def castlike_grad(ctx, node):
    """As Cast (the target type comes from the output either way); the input lending its type only
    is read for its type, so its gradient is zero."""
    grads = cast_grad(ctx, node) if node.wants(0) else {}
    if node.wants(1):
        grads[1] = ctx.zeros_like(node.input(1))
    return grads
