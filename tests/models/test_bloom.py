"""The small Bloom-style LM: seeded, causal, tied, trainable, and exporting to a short list of common ops."""
import math

import onnx
import pytest
import torch
import torch.nn.functional as F

from ortcheck.models import BloomConfig, build_bloom, causal_lm_loss, example_input_ids
from ortcheck.models import export_training_graph, op_types, run_exported

CONFIG = BloomConfig(vocab_size=32, hidden_size=16, num_heads=2, num_layers=2, max_seq_len=8)
BLOOM_OPS = [
    "Add", "Cast", "Concat", "Constant", "Div", "Dropout", "Gather", "Gelu", "Greater", "LayerNormalization",
    "MatMul", "Range", "Reshape", "Shape", "Softmax", "Transpose", "Unsqueeze", "Where",
]


def parameters(module):
    return {name: p.detach().clone() for name, p in module.named_parameters()}


@pytest.mark.parametrize("batch, seq", [(1, 1), (2, 5), (3, 8)])
def test_logits_are_batch_by_sequence_by_vocab(batch, seq):
    logits = build_bloom(CONFIG)(example_input_ids(CONFIG, batch=batch, seq=seq))
    assert logits.shape == (batch, seq, CONFIG.vocab_size) and logits.dtype == torch.float32


def test_same_seed_same_weights_and_inputs_other_seed_other_weights_global_rng_untouched():
    rng_before = torch.random.get_rng_state()
    a, b, c = parameters(build_bloom(CONFIG, 3)), parameters(build_bloom(CONFIG, 3)), parameters(build_bloom(CONFIG, 4))
    assert torch.equal(torch.random.get_rng_state(), rng_before)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert all(not torch.equal(a[k], c[k]) for k in a if "bias" not in k)  # Bloom's biases start at zero
    assert torch.equal(example_input_ids(CONFIG, 5), example_input_ids(CONFIG, 5))


def test_a_token_only_affects_logits_at_its_position_and_after():
    model = build_bloom(CONFIG)
    ids = example_input_ids(CONFIG, seq=6)
    changed = ids.clone()
    changed[:, 3] = (changed[:, 3] + 1) % CONFIG.vocab_size
    before, after = model(ids), model(changed)
    torch.testing.assert_close(before[:, :3], after[:, :3])
    assert not torch.allclose(before[:, 3:], after[:, 3:])


def test_head_is_tied_to_the_embedding():
    model = build_bloom(CONFIG)
    assert not any("head" in name for name, _ in model.named_parameters())
    ids = torch.zeros(1, 4, dtype=torch.long)  # only token 0 is looked up
    causal_lm_loss(model(ids), ids).backward()
    assert model.word_embeddings.weight.grad[1:].abs().sum() > 0  # unused rows get gradient only through the head


def test_causal_lm_loss_is_the_shifted_cross_entropy_and_reaches_every_parameter():
    model = build_bloom(CONFIG)
    ids = example_input_ids(CONFIG, batch=2, seq=5)
    logits = model(ids)
    loss = causal_lm_loss(logits, ids)
    expected = torch.stack([F.cross_entropy(logits[b, t], ids[b, t + 1]) for b in range(2) for t in range(4)]).mean()
    torch.testing.assert_close(loss, expected)
    assert abs(loss.item() - math.log(CONFIG.vocab_size)) < 0.5  # small init: near-uniform predictions
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_dropout_is_wired_when_p_is_above_zero():
    model = build_bloom(BloomConfig(vocab_size=32, hidden_size=16, num_heads=2, num_layers=1, dropout=0.5))
    ids = example_input_ids(CONFIG)
    assert not torch.equal(model(ids), model(ids))
    model.eval()
    assert torch.equal(model(ids), model(ids))


def test_heads_must_divide_hidden():
    with pytest.raises(ValueError, match="divisible"):
        BloomConfig(hidden_size=10, num_heads=4)


def test_exports_to_a_short_list_of_common_ops_with_dynamic_batch_and_sequence():
    model = build_bloom(CONFIG)
    graph = export_training_graph(model, (example_input_ids(CONFIG, batch=2, seq=4),))
    onnx.checker.check_model(graph)
    print("Bloom exports to:", " ".join(op_types(graph)))
    assert op_types(graph) == BLOOM_OPS
    ids = example_input_ids(CONFIG, seed=1, batch=3, seq=7)
    torch.testing.assert_close(run_exported(graph, (ids,)), model(ids).detach(), rtol=1e-5, atol=1e-5)
