"""QLoRA: ``bloom_lm``'s model with every Linear frozen in 4 bits (NF4, block 64) plus LoRA adapters
of rank 4 (alpha 8); only the adapters and the 4-bit layers' biases train. Same data and schedule."""
import dataclasses

from ortcheck.convergence.cases.bloom_lm import CASE as BLOOM_LM, CONFIG
from ortcheck.impls.base import Capability
from ortcheck.models.bloom import BloomLM
from ortcheck.models.linear4bit import NF4, quantize_linears

BLOCK_SIZE, RANK, ALPHA = 64, 4, 8.0


def build() -> BloomLM:
    return quantize_linears(BloomLM(CONFIG), block_size=BLOCK_SIZE, quant_type=NF4, lora_rank=RANK, lora_alpha=ALPHA)


CASE = dataclasses.replace(
    BLOOM_LM, name="qlora", build=build, requires=(Capability.BNB4,),
    description=f"{BLOOM_LM.description}; every Linear NF4 (block {BLOCK_SIZE}) frozen, LoRA rank {RANK} "
                f"alpha {ALPHA:g} and the biases train")
