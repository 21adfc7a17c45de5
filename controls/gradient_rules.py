"""Controls that break one op: the reference with one gradient rule replaced (``reference.autodiff.registry.rule_replaced``).

Each proves the op-level suite sees a wrong rule; the localizer's tests (tests/usercheck) use them
to show it names the op and the module that calls it."""
from controls.base import DuringForward


class _RuleReplaced(DuringForward):
    """The reference with ``rule`` serving ``op_type`` while its forward (and so its build) runs."""
    op_type, domain = "", ""

    def rule(self, ctx, node):
        raise NotImplementedError

    def seam(self):
        from reference.autodiff.registry import rule_replaced

        return rule_replaced(self.op_type, self.rule, self.domain)


def _op_grads(name: str, op: str) -> str:
    return f"suites/test_op_grads.py::test_op_outputs_and_input_gradients_match_eager[{name}-{op}-float32-regular]"


def _where_x_to_the_wrong_branch(ctx, node):
    """Where's rule sending X's gradient where the condition fails (Y's is right)."""
    from reference.autodiff.broadcast import reduce_to_input

    condition, zero = ctx.forward(node.input(0)), ctx.scalar(0, like=node.output(0))
    branches = {1: ctx.op("Where", condition, zero, node.grad()), 2: ctx.op("Where", condition, zero, node.grad())}
    return {i: reduce_to_input(ctx, node, i, grad) for i, grad in branches.items() if node.wants(i)}


class WhereGradToWrongBranch(_RuleReplaced):
    """A Where gradient rule that sends X's gradient to the wrong branch. Generated models only need
    the gradient of masked_fill's input (Y), so only the op-level suite's ``where`` can tell."""
    op_type = "Where"
    rule = staticmethod(_where_x_to_the_wrong_branch)
    caught_by = (_op_grads("where_grad_to_wrong_branch", "where"),
                 "suites/test_opinfo.py::test_opinfo_samples_train_like_eager[where_grad_to_wrong_branch-where-float32]")
    missed_by = ("suites/test_grad_parity.py::test_outputs_loss_and_gradients_match_eager",
                 _op_grads("where_grad_to_wrong_branch", "masked_fill"))


class _OtherCodeBook:
    """A MatMulBnb4 node seen with the other quant type (NF4 for FP4 and back)."""

    def __init__(self, node):
        self._node = node

    def __getattr__(self, name):
        return getattr(self._node, name)

    def attr(self, name, default=None):
        value = self._node.attr(name, default)
        return 1 - value if name == "quant_type" else value


class Bnb4GradOtherCodeBook(_RuleReplaced):
    """A MatMulBnb4 gradient that dequantizes with the other code book: the input gradient comes
    from the wrong weight while the forward stays right."""
    op_type, domain = "MatMulBnb4", "com.microsoft"
    caught_by = ("suites/test_bnb4.py::test_4bit_stacks_match_eager", "suites/test_bnb4.py::test_qlora_models_match_eager")

    @staticmethod
    def rule(ctx, node):
        from reference.autodiff.rules.op_matmulbnb4 import matmulbnb4_grad

        return matmulbnb4_grad(ctx, _OtherCodeBook(node))


def _softmax_without_the_sum(ctx, node):
    """Softmax's rule missing the ``- sum(dy * y)`` term: dx = y * dy."""
    return {0: ctx.mul(ctx.forward(node.output(0)), node.grad())}


def _sigmoid_from_the_input(ctx, node):
    """Sigmoid's derivative taken as x (1 - x) of the input instead of y (1 - y) of the output."""
    x = ctx.forward(node.input(0))
    return {0: ctx.mul(node.grad(), ctx.mul(x, ctx.sub(ctx.scalar(1, like=node.output(0)), x)))}


def _tanh_without_the_square(ctx, node):
    """tanh's derivative as 1 - y instead of 1 - y²."""
    return {0: ctx.mul(node.grad(), ctx.sub(ctx.scalar(1, like=node.output(0)), ctx.forward(node.output(0))))}


class SoftmaxGradWithoutSum(_RuleReplaced):
    """A Softmax gradient missing its sum term: every attention's gradient is off, the forward
    right. The localizer must name Softmax and the attention module that calls it."""
    op_type = "Softmax"
    rule = staticmethod(_softmax_without_the_sum)
    caught_by = (_op_grads("softmax_grad_without_sum", "softmax"),)


class SigmoidGradFromInput(_RuleReplaced):
    """A wrong Sigmoid rule: SiLU exports to Sigmoid and Mul, so every SiLU MLP (llama's) gets a
    wrong gradient."""
    op_type = "Sigmoid"
    rule = staticmethod(_sigmoid_from_the_input)
    caught_by = (_op_grads("sigmoid_grad_from_input", "sigmoid"),)


class TanhGradWithoutSquare(_RuleReplaced):
    """A wrong Tanh rule: GELU's tanh form (gpt2's MLP) gets a wrong gradient."""
    op_type = "Tanh"
    rule = staticmethod(_tanh_without_the_square)
    caught_by = (_op_grads("tanh_grad_without_square", "tanh"),
                 "suites/test_opinfo.py::test_opinfo_samples_train_like_eager[tanh_grad_without_square-tanh-float32]")


# The controls that break one op (its gradient rule), for the localizer's tests.
ONE_OP = (WhereGradToWrongBranch, Bnb4GradOtherCodeBook, SoftmaxGradWithoutSum, SigmoidGradFromInput,
          TanhGradWithoutSquare)
