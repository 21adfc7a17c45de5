from reference.autodiff.registry import gradient_rule
from reference.autodiff.rules.common import reshape_to_input

gradient_rule("Flatten")(reshape_to_input)
