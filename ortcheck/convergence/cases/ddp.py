"""``bloom_lm`` with the implementation's side under DDP on 2 ranks (gloo on CPU; nccl on CUDA,
where the nightly GPU job runs it), each rank on half of every batch, in both gradient delivery
modes. Eager trains once on the whole batches: data parallelism must not move the curve."""
import dataclasses

from ortcheck.convergence.cases.bloom_lm import CASE as BLOOM_LM
from ortcheck.impls.base import Capability

RANKS = 2
_DESCRIPTION = f"{BLOOM_LM.description}; the implementation's side under DDP, {RANKS} ranks, half of every batch each"

CASES = (
    dataclasses.replace(BLOOM_LM, name="ddp", ranks=RANKS, description=_DESCRIPTION),
    dataclasses.replace(BLOOM_LM, name="ddp_mem_efficient", ranks=RANKS, options={"mem_efficient_grad": True},
                        requires=(Capability.MEM_EFFICIENT_GRAD,),
                        description=f"{_DESCRIPTION}, gradients delivered as produced"),
)
