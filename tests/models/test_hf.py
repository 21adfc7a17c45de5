"""The zoo's mixture of experts is one: its loss carries the router's load-balancing loss, and a
small batch leaves some experts idle (what the routing properties rely on)."""
import pytest
import torch

from ortcheck.models import hf

pytestmark = pytest.mark.skipif(hf.unavailable_reason() is not None, reason=str(hf.unavailable_reason()))


def test_qwen2_moe_trains_on_its_language_loss_plus_the_load_balancing_loss():
    arch = hf.ARCHITECTURES["qwen2_moe"]
    model = arch.build(0)
    example = arch.example(0, 2, 8)
    out = model(**example)
    language = torch.nn.functional.cross_entropy(out.logits[:, :-1].reshape(-1, hf.VOCAB),
                                                 example["labels"][:, 1:].reshape(-1))
    coefficient = model.config.router_aux_loss_coef
    assert out.aux_loss > 0 and coefficient > 0
    torch.testing.assert_close(out.loss, language + coefficient * out.aux_loss)


def test_a_small_batch_leaves_experts_idle_and_a_large_one_reaches_them_all():
    arch = hf.ARCHITECTURES["qwen2_moe"]
    model = arch.build(0)
    experts = dict(arch.sizes)["num_experts"]
    with torch.no_grad():
        small = hf.experts_hit(model(**arch.example(0, 2, 2)).router_logits, arch)
        large = hf.experts_hit(model(**arch.example(0, 8, 16)).router_logits, arch)
    assert all(len(hit) < experts for hit in small), small
    assert all(hit == tuple(range(experts)) for hit in large), large
