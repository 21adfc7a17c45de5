"""Tiny randomly initialised Hugging Face models of the architectures users train (no downloads).

Each architecture is its config and model class with the smallest sizes that keep its structure
(2 layers, 2 heads, hidden 16, vocab 64): grouped-query attention where the architecture has it,
rotary (partial too) or learned positions, tied or untied heads, mixtures of experts (Mixtral, its
experts looped or grouped; Qwen2-MoE with a shared expert and its router's load-balancing loss),
encoder-decoders, encoders, and vision models on 8x8 images (a ViT, a ResNet with BatchNorm). Dropout is off, so a step is
deterministic. The first architectures and Qwen2-MoE use the plain ("eager") attention, which
every stack exports; the ``*_sdpa`` ones and every other later family keep the family's default
(sdpa: with grouped-query attention transformers 5 calls ``scaled_dot_product_attention(enable_gqa=True)``).
``transformers`` is the optional extra ``ortcheck[models]``.
"""
from __future__ import annotations

import dataclasses
import importlib.util

import torch

from ortcheck.models.seeding import seeded

VOCAB = 64
IMAGE_SIDE, CLASSES = 8, 4
INSTALL = "pip install 'ortcheck[models]'  (or: pip install transformers)"
_DROPOUTS = ("dropout", "attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop",
             "hidden_dropout_prob", "attention_probs_dropout_prob", "dropout_rate", "activation_dropout",
             "classifier_dropout", "summary_first_dropout")


def unavailable_reason() -> str | None:
    if importlib.util.find_spec("transformers") is None:
        return f"transformers is not installed; install it with: {INSTALL}"
    return None


@dataclasses.dataclass(frozen=True)
class Architecture:
    name: str
    config: str          # transformers class names, looked up when built
    model: str
    sizes: tuple         # config keyword arguments, as (key, value) pairs
    attention: str | None = "eager"  # None: the family's default implementation
    inputs: str = "tokens"  # "tokens": input_ids and labels; "images": pixel_values and class labels

    def example(self, seed: int, batch: int, length: int) -> dict[str, torch.Tensor]:
        """The keyword arguments of one training call: the model computes its own loss from ``labels``."""
        if self.inputs == "images":
            generator = torch.Generator().manual_seed(seed)
            pixels = torch.randn(batch, 3, IMAGE_SIDE, IMAGE_SIDE, generator=generator)
            return {"pixel_values": pixels, "labels": torch.randint(0, CLASSES, (batch,), generator=generator)}
        ids = token_ids(seed, batch, length)
        return {"input_ids": ids, "labels": ids}

    def build(self, seed: int, use_cache: bool = False) -> torch.nn.Module:
        """``use_cache=False`` as in training: no key/value cache objects among the outputs."""
        import transformers

        config = getattr(transformers, self.config)(**dict(self.sizes))
        if self.attention:
            config._attn_implementation = self.attention
        config.use_cache = use_cache
        for key in _DROPOUTS:
            if hasattr(config, key):
                setattr(config, key, 0.0)
        with seeded(seed):
            return getattr(transformers, self.model)(config).train()


def _decoder(hidden: int = 16, **extra) -> tuple:
    return tuple({"vocab_size": VOCAB, "num_hidden_layers": 2, "num_attention_heads": 2, "hidden_size": hidden,
                  "max_position_embeddings": 32, **extra}.items())


ARCHITECTURES = {a.name: a for a in (
    Architecture("gpt2", "GPT2Config", "GPT2LMHeadModel",
                 (("vocab_size", VOCAB), ("n_layer", 2), ("n_head", 2), ("n_embd", 16), ("n_positions", 32))),
    Architecture("llama", "LlamaConfig", "LlamaForCausalLM",
                 _decoder(intermediate_size=32, num_key_value_heads=1)),
    Architecture("mistral", "MistralConfig", "MistralForCausalLM",
                 _decoder(intermediate_size=32, num_key_value_heads=1, sliding_window=None)),
    Architecture("llama_sdpa", "LlamaConfig", "LlamaForCausalLM",
                 _decoder(intermediate_size=32, num_key_value_heads=1), attention=None),
    Architecture("mistral_sdpa", "MistralConfig", "MistralForCausalLM",
                 _decoder(intermediate_size=32, num_key_value_heads=1, sliding_window=None), attention=None),
    Architecture("qwen2_sdpa", "Qwen2Config", "Qwen2ForCausalLM",
                 _decoder(intermediate_size=32, num_attention_heads=4, num_key_value_heads=2), attention=None),
    Architecture("bert", "BertConfig", "BertForMaskedLM", _decoder(intermediate_size=32)),
    Architecture("t5", "T5Config", "T5ForConditionalGeneration",
                 (("vocab_size", VOCAB), ("d_model", 16), ("d_kv", 8), ("d_ff", 32), ("num_layers", 2),
                  ("num_heads", 2), ("decoder_start_token_id", 0))),
    Architecture("opt", "OPTConfig", "OPTForCausalLM", _decoder(ffn_dim=32, word_embed_proj_dim=16)),
    Architecture("bloom", "BloomConfig", "BloomForCausalLM",
                 (("vocab_size", VOCAB), ("hidden_size", 16), ("n_layer", 2), ("n_head", 2))),
    Architecture("falcon", "FalconConfig", "FalconForCausalLM", _decoder(new_decoder_architecture=False)),
    Architecture("phi", "PhiConfig", "PhiForCausalLM", _decoder(intermediate_size=32)),
    # Each family's default attention from here on.
    Architecture("qwen3", "Qwen3Config", "Qwen3ForCausalLM",
                 _decoder(intermediate_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=8), None),
    Architecture("gemma", "GemmaConfig", "GemmaForCausalLM",
                 _decoder(intermediate_size=32, num_attention_heads=4, num_key_value_heads=1, head_dim=8), None),
    Architecture("mixtral", "MixtralConfig", "MixtralForCausalLM",
                 # experts as a loop over the experts hit (transformers' "eager"; the default, grouped,
                 # is mixtral_grouped)
                 _decoder(intermediate_size=32, num_key_value_heads=1, sliding_window=None, num_local_experts=4,
                          num_experts_per_tok=2, experts_implementation="eager"), None),
    Architecture("mixtral_grouped", "MixtralConfig", "MixtralForCausalLM",
                 # transformers' default experts: tokens sorted by expert, counted with histc, one grouped
                 # matmul (no float64 kernel: the oracle's float64 runs loop over the experts instead)
                 _decoder(intermediate_size=32, num_key_value_heads=1, sliding_window=None, num_local_experts=4,
                          num_experts_per_tok=2), None),
    Architecture("qwen2_moe", "Qwen2MoeConfig", "Qwen2MoeForCausalLM",
                 # eight experts (a small batch routes to only some of them) beside a shared expert
                 # behind a sigmoid gate; the router's load-balancing loss joins the loss; eager attention
                 # (as the first architectures: ORTModule reaches the experts) and eager experts
                 _decoder(intermediate_size=32, num_key_value_heads=1, moe_intermediate_size=16,
                          shared_expert_intermediate_size=16, num_experts=8, num_experts_per_tok=2,
                          output_router_logits=True, experts_implementation="eager")),
    Architecture("gpt_neox", "GPTNeoXConfig", "GPTNeoXForCausalLM", _decoder(intermediate_size=32, rotary_pct=0.5),
                 None),
    Architecture("bart", "BartConfig", "BartForConditionalGeneration",
                 (("vocab_size", VOCAB), ("d_model", 16), ("encoder_layers", 2), ("decoder_layers", 2),
                  ("encoder_attention_heads", 2), ("decoder_attention_heads", 2), ("encoder_ffn_dim", 32),
                  ("decoder_ffn_dim", 32), ("max_position_embeddings", 32)), None),
    Architecture("roberta", "RobertaConfig", "RobertaForMaskedLM",
                 _decoder(intermediate_size=32, max_position_embeddings=40), None),
    Architecture("vit", "ViTConfig", "ViTForImageClassification",
                 (("hidden_size", 16), ("num_hidden_layers", 2), ("num_attention_heads", 2), ("intermediate_size", 32),
                  ("image_size", IMAGE_SIDE), ("patch_size", 4), ("num_labels", CLASSES)), None, "images"),
    Architecture("resnet", "ResNetConfig", "ResNetForImageClassification",
                 (("embedding_size", 8), ("hidden_sizes", [8, 16]), ("depths", [1, 1]), ("layer_type", "basic"),
                  ("num_labels", CLASSES)), None, "images"),
)}


ROUTED = ("qwen2_moe",)  # mixtures of experts that return their router logits (output_router_logits)


def experts_hit(router_logits, architecture: Architecture) -> tuple[tuple[int, ...], ...]:
    """Per layer, the experts a batch's tokens were routed to (top-k of the router's logits)."""
    k = dict(architecture.sizes)["num_experts_per_tok"]
    return tuple(tuple(sorted(set(logits.topk(k, dim=-1).indices.flatten().tolist()))) for logits in router_logits)


def token_ids(seed: int, batch: int, length: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))
