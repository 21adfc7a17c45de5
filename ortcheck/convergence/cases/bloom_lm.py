"""A small Bloom-style causal LM: attention, LayerNorm, GELU and a tied head, trained as an LM."""
import dataclasses
import functools

import torch

from ortcheck.convergence.cases import Case
from ortcheck.convergence.tolerance import FP32_PARITY
from ortcheck.convergence.training import TrainingConfig
from ortcheck.models.bloom import BloomConfig, BloomLM, causal_lm_loss

CONFIG = BloomConfig(vocab_size=64, hidden_size=32, num_heads=4, num_layers=2, max_seq_len=16)
BATCH = 8


def bigram_batches(config: BloomConfig, batch: int, seed: int, steps: int) -> list:
    """Sequences from a fixed random bigram table: learnable structure, so the loss falls."""
    generator = torch.Generator().manual_seed(seed)
    successors = torch.randint(0, config.vocab_size, (config.vocab_size, 2), generator=generator)
    out = []
    for _ in range(steps):
        tokens = [torch.randint(0, config.vocab_size, (batch,), generator=generator)]
        for _ in range(config.max_seq_len - 1):
            pick = torch.randint(0, 2, (batch,), generator=generator)
            tokens.append(successors[tokens[-1], pick])
        ids = torch.stack(tokens, dim=1)
        out.append(((ids,), ids))
    return out


def lm_case(name: str, config: BloomConfig, batch: int, training: TrainingConfig, nightly_steps: int,
            nightly_only: bool = False) -> Case:
    """A Bloom-style LM trained with AdamW on bigram sequences, at any size."""
    return Case(
        name=name,
        description=f"Bloom-style causal LM {dataclasses.asdict(config)} on bigram sequences, AdamW",
        build=lambda: BloomLM(config),
        batches=functools.partial(bigram_batches, config, batch),
        loss=causal_lm_loss,
        training=training,
        tolerance=FP32_PARITY,
        nightly_steps=nightly_steps,
        nightly_only=nightly_only,
    )


CASE = lm_case("bloom_lm", CONFIG, BATCH, TrainingConfig(steps=40, optimizer="adamw", lr=1e-2,
                                                         warmup_steps=4), nightly_steps=400)
