from reference.autodiff.registry import gradient_rule

# No samples: tests/reference/autodiff/test_rule_samples.py (EXEMPT) says why.
@gradient_rule("SpaceToDepth", samples=())
def space_to_depth_grad(ctx, node):
    """SpaceToDepth is the inverse of DepthToSpace in DCR mode, so that undoes it."""
    return {0: ctx.op("DepthToSpace", node.grad(), blocksize=node.attr("blocksize"), mode="DCR")}
