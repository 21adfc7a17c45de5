"""The Bloom-style LM at a size only the nightly job trains: wider, deeper, longer sequences."""
from ortcheck.convergence.cases.bloom_lm import lm_case
from ortcheck.convergence.training import TrainingConfig
from ortcheck.models.bloom import BloomConfig

CONFIG = BloomConfig(vocab_size=256, hidden_size=128, num_heads=8, num_layers=4, max_seq_len=64)
BATCH = 8

CASE = lm_case("bloom_lm_large", CONFIG, BATCH, TrainingConfig(steps=200, optimizer="adamw",
                                                               lr=3e-3, warmup_steps=10),
               nightly_steps=200, nightly_only=True)
