"""The Bloom-style LM at a size only the nightly job trains: wider, deeper, longer sequences."""
import dataclasses
import functools

from ortcheck.convergence.cases import Case
from ortcheck.convergence.cases.bloom_lm import bigram_batches
from ortcheck.convergence.tolerance import FP32_PARITY
from ortcheck.convergence.training import TrainingConfig
from ortcheck.models.bloom import BloomConfig, BloomLM, causal_lm_loss

CONFIG = BloomConfig(vocab_size=256, hidden_size=128, num_heads=8, num_layers=4, max_seq_len=64)
BATCH = 8

CASE = Case(
    name="bloom_lm_large",
    description=f"Bloom-style causal LM {dataclasses.asdict(CONFIG)} on bigram sequences, AdamW",
    build=lambda: BloomLM(CONFIG),
    batches=functools.partial(bigram_batches, CONFIG, BATCH),
    loss=causal_lm_loss,
    training=TrainingConfig(steps=200, batch_size=BATCH, optimizer="adamw", lr=3e-3, warmup_steps=10),
    tolerance=FP32_PARITY,
    nightly_steps=200,
    nightly_only=True,
)
