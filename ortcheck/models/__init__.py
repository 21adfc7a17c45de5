"""Small self-contained models the suites and convergence gates train (no downloads)."""
from ortcheck.models.bloom import BloomConfig, BloomLM, build_bloom, causal_lm_loss, example_input_ids
from ortcheck.models.layers import MLP, Residual, SelfAttention, causal_mask
from ortcheck.models.onnx_export import export_training_graph, op_types, run_exported
from ortcheck.models.seeding import build_seeded, seeded

__all__ = [
    "BloomConfig", "BloomLM", "build_bloom", "causal_lm_loss", "example_input_ids",
    "MLP", "Residual", "SelfAttention", "causal_mask",
    "export_training_graph", "op_types", "run_exported", "build_seeded", "seeded",
]
