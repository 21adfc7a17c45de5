"""``bloom_lm`` and ``qlora`` in mixed precision, as users train them on GPUs: float16 autocast with a
GradScaler, and bfloat16 autocast (QLoRA's adapters then train in a bfloat16 compute dtype).

Same models, data and schedules as their float32 cases; the float64 oracle judges each step in the
precision autocast chose (``ortcheck.checks.autocast``), and their goldens sit beside the float32
ones, one file per dtype (``golden/bloom_lm/<impl>-<device>-float16.json``).

The float16 loss scale keeps every scaled gradient far below float16's largest value: no step of
the case overflows in any correct run (the runs would disagree on skipping it, and the float64 runs
never overflow), measured in docs/architecture.md ("Mixed precision").
"""
import dataclasses

from ortcheck.convergence.cases import Case
from ortcheck.convergence.cases.bloom_lm import CASE as BLOOM_LM
from ortcheck.convergence.cases.qlora import CASE as QLORA
from ortcheck.convergence.tolerance import MIXED_PARITY

FLOAT16_LOSS_SCALE = 2.0 ** 10


def in_precision(case: Case, dtype: str, loss_scale: float | None = None) -> Case:
    """``case`` under ``dtype`` autocast (with a GradScaler at ``loss_scale``), its goldens beside its own."""
    scaler = f", GradScaler at {loss_scale:g}" if loss_scale else ""
    return dataclasses.replace(case, name=f"{case.name}_{dtype}", golden_case=case.name,
                               description=f"{case.description}; {dtype} autocast{scaler}",
                               training=dataclasses.replace(case.training, autocast=dtype, loss_scale=loss_scale),
                               tolerance=MIXED_PARITY[dtype])


CASES = (
    in_precision(BLOOM_LM, "float16", FLOAT16_LOSS_SCALE),
    in_precision(BLOOM_LM, "bfloat16"),
    in_precision(QLORA, "bfloat16"),
)
