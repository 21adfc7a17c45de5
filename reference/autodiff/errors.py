"""Errors the gradient builder raises on purpose."""


class UnsupportedOpError(Exception):
    """A node on a differentiable path has no gradient rule; the message names the op and the node."""

    def __init__(self, op_type: str, node_name: str, supported: list[str]):
        self.op_type = op_type
        self.node_name = node_name
        super().__init__(
            f"no gradient rule for op '{op_type}' (node '{node_name}'); supported: {', '.join(supported)}"
        )
