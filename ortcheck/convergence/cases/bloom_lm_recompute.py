"""``bloom_lm`` trained through the memory optimizer at levels 1 and 2 (layer-wise recompute).

Same model, data and schedule as ``bloom_lm``: the curve must follow eager under the same gate, and
(suites/test_recompute.py) equal the implementation's own level-0 curve bit for bit.
"""
import dataclasses

from ortcheck.convergence.cases.bloom_lm import CASE as BLOOM_LM
from ortcheck.impls.base import Capability

CASES = tuple(
    dataclasses.replace(BLOOM_LM, name=f"bloom_lm_recompute{level}", options={"memory_opt_level": level},
                        requires=(Capability.RECOMPUTE,), nightly_steps=BLOOM_LM.nightly_steps)
    for level in (1, 2))
