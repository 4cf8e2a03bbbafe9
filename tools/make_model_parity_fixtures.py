#!/usr/bin/env python3
"""Create the model-parity fixtures: tiny random models plus what transformers computes on them.

For each fixture, tests/fixtures/parity/<name>/ holds the model exactly as save_pretrained writes
it (config.json, generation_config.json, model.safetensors, float32) and expected.safetensors:

  input_ids    I64 [T]       three documents packed into one stream
  labels       I64 [T]       aligned with input_ids, -100 = not scored
  doc_lengths  I64 [3]
  logits       F32 [T, V]    each document run alone through transformers, concatenated
  loss         F32 [1]       sum over documents of the shifted cross-entropy / number of targets
  grad.<name>  F32           d loss / d parameter for every named parameter (tied weights once)
  gen_prompt        I64 [P]
  gen_greedy_cache  I64 [P+N]  model.generate(do_sample=False, use_cache=True)
  gen_greedy_nocache I64 [P+N] model.generate(do_sample=False, use_cache=False)

and tokens.json, the same batch in `sft debug forward --tokens` form.

Packed semantics: positions restart and attention stays inside each document, and a document's
last token has no target (the next document's first token is not its continuation), which is
what running the documents separately gives. The oracle is therefore separate runs.

Weights are random (seeded) with a larger scale than transformers' init so logits are far from
uniform, and norm weights and biases are randomised too so their gradients are exercised.

Run: ~/.venv-sft/bin/python tools/make_model_parity_fixtures.py [NAME ...]
(names: only those fixtures are written; the others keep their committed bytes.)
"""

import json
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import (
    Gemma2Config,
    Gemma2ForCausalLM,
    GptOssConfig,
    GptOssForCausalLM,
    GraniteMoeConfig,
    GraniteMoeForCausalLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GraniteConfig,
    GraniteForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    Ministral3Config,
    Ministral3ForCausalLM,
    MinistralConfig,
    MinistralForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    MixtralConfig,
    MixtralForCausalLM,
    OlmoeConfig,
    OlmoeForCausalLM,
    Olmo2Config,
    Olmo2ForCausalLM,
    Phi3Config,
    Phi3ForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
    Qwen3MoeConfig,
    Qwen3MoeForCausalLM,
    SmolLM3Config,
    SmolLM3ForCausalLM,
)

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "fixtures" / "parity"
NEW_TOKENS = 32

BASE = dict(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=4,
    max_position_embeddings=128,
    rms_norm_eps=1e-6,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
    attn_implementation="eager",
)


def fixtures():
    yield "llama_mha_untied", LlamaConfig, LlamaForCausalLM, dict(
        tie_word_embeddings=False, rope_theta=10000.0
    ), [12, 9, 15]
    yield "llama_gqa_tied_llama3", LlamaConfig, LlamaForCausalLM, dict(
        num_key_value_heads=2,
        tie_word_embeddings=True,
        rope_theta=500000.0,
        rope_scaling=dict(
            rope_type="llama3",
            factor=8.0,
            low_freq_factor=1.0,
            high_freq_factor=4.0,
            original_max_position_embeddings=16,
        ),
        num_hidden_layers=3,
    ), [14, 10, 12]
    yield "mistral_sliding", MistralConfig, MistralForCausalLM, dict(
        num_key_value_heads=2, sliding_window=5, tie_word_embeddings=False, head_dim=16
    ), [16, 6, 13]
    yield "qwen2_bias_yarn", Qwen2Config, Qwen2ForCausalLM, dict(
        num_key_value_heads=2,
        tie_word_embeddings=True,
        rope_theta=10000.0,
        rope_scaling=dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=32),
    ), [11, 13, 9]
    yield "qwen3_qknorm_linear", Qwen3Config, Qwen3ForCausalLM, dict(
        num_key_value_heads=2,
        head_dim=32,
        tie_word_embeddings=False,
        rope_theta=10000.0,
        rope_scaling=dict(rope_type="linear", factor=2.0),
        attention_bias=False,
    ), [13, 8, 14]
    # Dynamic NTK scaling only acts past max_position_embeddings: documents of 12 and 14 tokens
    # exceed 8, the 6-token one does not (transformers rescales per forward call).
    yield "llama_dynamic", LlamaConfig, LlamaForCausalLM, dict(
        num_key_value_heads=2, tie_word_embeddings=False, max_position_embeddings=8,
        rope_scaling=dict(rope_type="dynamic", factor=2.0)
    ), [12, 6, 14]
    yield "llama_biases", LlamaConfig, LlamaForCausalLM, dict(
        num_key_value_heads=2, tie_word_embeddings=False, attention_bias=True, mlp_bias=True
    ), [10, 12, 7]
    # SmolLM3: layer 1 of 3 without RoPE (NoPE), and the sliding window on it (use_sliding_window
    # puts it on the NoPE layers); tied embeddings as the config class has them by default.
    yield "smollm3_nope_sliding", SmolLM3Config, SmolLM3ForCausalLM, dict(
        num_key_value_heads=2,
        num_hidden_layers=3,
        no_rope_layers=[1, 0, 1],
        use_sliding_window=True,
        sliding_window=6,
        rope_theta=10000.0,
    ), [13, 9, 11]
    # OLMo 2: norms after attention and the MLP (no pre norms), q/k norms over the whole q and k
    # projections, untied, its own rms_norm_eps default.
    yield "olmo2_post_norms", Olmo2Config, Olmo2ForCausalLM, dict(
        num_key_value_heads=2, tie_word_embeddings=False, rms_norm_eps=1e-5, rope_theta=10000.0
    ), [12, 14, 8]
    # Granite: embeddings × embedding_multiplier, each branch × residual_multiplier before its add,
    # the attention scale attention_multiplier itself, logits / logits_scaling (Granite 3 has 12,
    # 0.22, 1/128 and 8; smaller here so a tiny model stays far from saturation).
    yield "granite_multipliers", GraniteConfig, GraniteForCausalLM, dict(
        num_key_value_heads=2, tie_word_embeddings=True, embedding_multiplier=4.0,
        residual_multiplier=0.5, attention_multiplier=0.1, logits_scaling=2.0, rope_theta=10000.0
    ), [10, 15, 9]
    # Phi-3: fused qkv_proj / gate_up_proj, partial rotary (8 of 16 dims: 4 frequencies) and
    # longrope. transformers picks the factor set from max(position_ids) + 1 of the call: here
    # every document and the whole generation stay within original_max_position_embeddings
    # (short factors), and in the second every document passes it (long factors; generation
    # crosses it at its third step, where the cached prompt keys keep the short rotation).
    # The short one takes transformers' attention factor (sqrt(1 + ln(max / original) /
    # ln original), on both factor sets); the long one gives attention_factor.
    def phi3(original, short, long, **rope):
        return dict(
            num_key_value_heads=2,
            tie_word_embeddings=False,
            rms_norm_eps=1e-5,
            original_max_position_embeddings=original,
            rope_parameters=dict(
                rope_type="longrope",
                rope_theta=10000.0,
                partial_rotary_factor=0.5,
                short_factor=short,
                long_factor=long,
                **rope,
            ),
        )

    yield "phi3_longrope_short", Phi3Config, Phi3ForCausalLM, phi3(
        48, [1.0, 1.3, 2.1, 3.7], [1.5, 4.0, 9.0, 20.0]
    ), [12, 16, 9]
    yield "phi3_longrope_long", Phi3Config, Phi3ForCausalLM, phi3(
        8, [1.0, 1.3, 2.1, 3.7], [1.5, 4.0, 9.0, 20.0], attention_factor=1.1
    ), [12, 14, 10]
    # Gemma 3: (1 + w) norms before and after each branch, q/k norms, GELU-tanh gated MLP,
    # embeddings × sqrt(hidden), query_pre_attn_scalar as the score scale, layers 0 and 2 sliding
    # (window 5, their own RoPE theta), layer 1 full, attention and final-logit soft-capping
    # (Gemma 3 itself ships neither cap; Gemma 2 does, so both are exercised here), tied.
    yield "gemma3_sliding_softcap", Gemma3TextConfig, Gemma3ForCausalLM, dict(
        num_key_value_heads=2,
        num_hidden_layers=3,
        head_dim=16,
        hidden_activation="gelu_pytorch_tanh",
        query_pre_attn_scalar=24,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        sliding_window=5,
        rope_parameters=dict(
            full_attention=dict(rope_type="default", rope_theta=10000.0),
            sliding_attention=dict(rope_type="default", rope_theta=1000.0),
        ),
        attn_logit_softcapping=3.0,
        final_logit_softcapping=4.0,
        tie_word_embeddings=True,
    ), [11, 13, 9]
    # Gemma 2: the same (1 + w) pre and post norms, GELU-tanh MLP, sqrt(hidden) embeddings and
    # query_pre_attn_scalar, no q/k norms, one RoPE for every layer, sliding and full layers
    # alternating (window 4), and both soft-caps applied (Gemma2Attention passes its cap).
    yield "gemma2_softcaps", Gemma2Config, Gemma2ForCausalLM, dict(
        num_key_value_heads=2,
        num_hidden_layers=3,
        head_dim=16,
        hidden_activation="gelu_pytorch_tanh",
        query_pre_attn_scalar=20,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        sliding_window=4,
        rope_parameters=dict(rope_type="default", rope_theta=5000.0),
        attn_logit_softcapping=2.5,
        final_logit_softcapping=5.0,
        tie_word_embeddings=True,
    ), [10, 12, 9]
    # Ministral: Mistral's layers with per-layer layer_types; layers 0 and 2 slide (window 5),
    # layer 1 attends fully, so a document longer than the window tells them apart.
    yield "ministral_layer_types", MinistralConfig, MinistralForCausalLM, dict(
        num_key_value_heads=2,
        num_hidden_layers=3,
        head_dim=16,
        sliding_window=5,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        tie_word_embeddings=False,
    ), [14, 9, 12]
    # Qwen3-MoE: 4 experts, 2 per token, renormalised top-k weights (norm_topk_prob), the
    # experts in layers 0 and 2 and a dense MLP in layer 1 (mlp_only_layers); q/k norms as Qwen3.
    # The eager experts loop (transformers' reference form) is the oracle.
    yield "qwen3_moe_topk_norm", Qwen3MoeConfig, Qwen3MoeForCausalLM, dict(
        num_key_value_heads=2,
        num_hidden_layers=3,
        head_dim=16,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        norm_topk_prob=True,
        mlp_only_layers=[1],
        tie_word_embeddings=False,
        experts_implementation="eager",
    ), [13, 10, 12]
    # Qwen3-MoE: 8 experts, 3 per token, the raw top-k probabilities as weights, experts every
    # second layer (decoder_sparse_step 2: layer 1 of 2), tied embeddings.
    yield "qwen3_moe_sparse_step", Qwen3MoeConfig, Qwen3MoeForCausalLM, dict(
        num_key_value_heads=2,
        num_hidden_layers=2,
        num_experts=8,
        num_experts_per_tok=3,
        moe_intermediate_size=24,
        norm_topk_prob=False,
        decoder_sparse_step=2,
        tie_word_embeddings=True,
        experts_implementation="eager",
    ), [11, 14, 9]
    # OLMoE: the same router and experts (4 experts of intermediate_size, 2 per token, raw top-k
    # weights) in every layer, q/k norms over the whole q and k projections with pre norms.
    yield "olmoe_experts", OlmoeConfig, OlmoeForCausalLM, dict(
        num_key_value_heads=2,
        num_hidden_layers=2,
        intermediate_size=32,
        num_experts=4,
        num_experts_per_tok=2,
        norm_topk_prob=False,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        experts_implementation="eager",
    ), [12, 9, 13]
    # Ministral 3: Mistral's layers with YaRN, and Llama 4's query scaling after RoPE, 1 + β·log(1 +
    # ⌊position / 8⌋) with the original length shrunk to 8, so the documents cross three blocks of
    # positions and the cached generation continues past them.
    yield "ministral3_query_scaling", Ministral3Config, Ministral3ForCausalLM, dict(
        num_key_value_heads=2,
        head_dim=16,
        rope_parameters=dict(rope_type="yarn", rope_theta=10000.0, factor=2.0, original_max_position_embeddings=8,
                             beta_fast=32.0, beta_slow=1.0, mscale=1.0, mscale_all_dim=1.0,
                             llama_4_scaling_beta=0.5),
        tie_word_embeddings=False,
    ), [21, 9, 13]
    # Mixtral: 4 experts of intermediate_size, 2 per token, softmax then top-k then renormalised
    # weights, in every layer; a sliding window (8) shorter than the documents. On disk the
    # experts are block_sparse_moe.experts.<e>.w1 (gate), w3 (up) and w2 (down).
    yield "mixtral_experts_sliding", MixtralConfig, MixtralForCausalLM, dict(
        num_key_value_heads=2,
        intermediate_size=32,
        num_local_experts=4,
        num_experts_per_tok=2,
        sliding_window=8,
        rope_theta=10000.0,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        experts_implementation="eager",
    ), [13, 11, 12]
    # GraniteMoe: Granite's four multipliers around 4 experts, 2 per token (softmax over the
    # top-k logits), attention biases; on disk block_sparse_moe.input_linear (every expert's
    # gate and up), output_linear and router.layer.
    yield "granitemoe_multipliers", GraniteMoeConfig, GraniteMoeForCausalLM, dict(
        num_key_value_heads=2,
        intermediate_size=32,
        num_local_experts=4,
        num_experts_per_tok=2,
        attention_bias=True,
        embedding_multiplier=4.0,
        residual_multiplier=0.5,
        attention_multiplier=0.1,
        logits_scaling=2.0,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        experts_implementation="eager",
    ), [12, 14, 9]
    # gpt-oss: 4 experts, 2 per token, a router with a bias (softmax over the top-k logits),
    # expert biases, the clamped SwiGLU ((up + 1) · gate · σ(1.702 · gate)) with a limit low
    # enough that gate and up are clamped on both sides, attention biases and sinks, sliding (8)
    # and full layers alternating, gpt-oss's default YaRN. On disk mlp.experts.gate_up_proj
    # (E, C, 2I: gate and up interleaved) and down_proj (E, I, C), transposed.
    yield "gpt_oss_experts_sinks", GptOssConfig, GptOssForCausalLM, dict(
        num_key_value_heads=2,
        head_dim=16,
        intermediate_size=32,
        num_local_experts=4,
        num_experts_per_tok=2,
        sliding_window=8,
        swiglu_limit=1.2,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        experts_implementation="eager",
    ), [13, 12, 11]


def randomise(model, gen):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith(".bias") or name.endswith("_bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            else:
                fan_in = p.shape[-1]
                p.copy_(torch.randn(p.shape, generator=gen) * (1.5 / fan_in**0.5))


def fresh_rope(model):
    """Dynamic RoPE in transformers keeps state across forward calls (the longest sequence seen).
    The oracle for a packed batch is each document alone on a fresh model, so reset it."""
    rope = model.model.rotary_emb
    if getattr(rope, "rope_type", "") == "dynamic":
        rope.register_buffer("inv_freq", rope.original_inv_freq.clone(), persistent=False)
        rope.max_seq_len_cached = rope.original_max_seq_len


def shifted_ce_sum(logits, labels):
    # HF ForCausalLMLoss: logits[t] scored against labels[t + 1], -100 ignored.
    tgt = labels[1:]
    lg = logits[:-1]
    keep = tgt != -100
    if keep.sum() == 0:
        return logits.sum() * 0.0, 0
    return torch.nn.functional.cross_entropy(lg[keep], tgt[keep], reduction="sum"), int(keep.sum())


def add_router_aux_loss(model, config, ids, doc_lengths, tensors):
    """Mixtures of experts: transformers' load_balancing_loss_func over the batch's tokens (each
    document's router logits, concatenated per layer: routing is per token, so this is the packed
    batch's), unweighted, as aux_loss, and its gradient alone as aux_grad.<name>."""
    import importlib

    module = importlib.import_module(type(model).__module__)
    model.zero_grad()
    per_layer, start = None, 0
    for n in doc_lengths:
        fresh_rope(model)
        out = model(input_ids=ids[start : start + n][None], output_router_logits=True)
        logits = [lg.reshape(-1, lg.shape[-1]) for lg in out.router_logits]
        per_layer = logits if per_layer is None else [torch.cat(p) for p in zip(per_layer, logits)]
        start += n
    aux = module.load_balancing_loss_func(
        tuple(per_layer),
        getattr(config, "num_experts", None) or config.num_local_experts,
        config.num_experts_per_tok,
        None,
    )
    aux.backward()
    tensors["aux_loss"] = aux.detach().reshape(1).float()
    for pname, p in model.named_parameters():
        if p.grad is not None:
            tensors["aux_grad." + pname] = p.grad.detach().float().contiguous()
    model.zero_grad()


def make(name, config_cls, model_cls, overrides, doc_lengths, seed):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    cfg = dict(BASE)
    cfg.update(overrides)
    config = config_cls(**cfg)
    model = model_cls(config).float()
    randomise(model, gen)
    model.eval()

    dir_ = OUT / name
    if dir_.exists():
        shutil.rmtree(dir_)
    model.save_pretrained(dir_, safe_serialization=True)

    T = sum(doc_lengths)
    V = config.vocab_size
    ids = torch.randint(3, V, (T,), generator=gen)
    labels = ids.clone()
    mask = torch.rand(T, generator=gen) < 0.25
    labels[mask] = -100
    labels[:3] = -100  # a masked "prompt" at the start

    model.zero_grad()
    logits_all, loss_sum, count = [], 0.0, 0
    start = 0
    for n in doc_lengths:
        fresh_rope(model)
        out = model(input_ids=ids[start : start + n][None])
        lg = out.logits[0]
        s, c = shifted_ce_sum(lg, labels[start : start + n])
        loss_sum = loss_sum + s
        count += c
        logits_all.append(lg)
        start += n
    loss = loss_sum / count
    loss.backward()

    # Sanity: transformers' own loss on the first document agrees with ours.
    fresh_rope(model)
    first = model(input_ids=ids[: doc_lengths[0]][None], labels=labels[: doc_lengths[0]][None])
    s0, c0 = shifted_ce_sum(logits_all[0], labels[: doc_lengths[0]])
    assert abs(first.loss.item() - (s0 / c0).item()) < 1e-5

    tensors = {
        "input_ids": ids.to(torch.int64),
        "labels": labels.to(torch.int64),
        "doc_lengths": torch.tensor(doc_lengths, dtype=torch.int64),
        "logits": torch.cat(logits_all).detach().float().contiguous(),
        "loss": loss.detach().reshape(1).float(),
    }
    for pname, p in model.named_parameters():
        tensors["grad." + pname] = p.grad.detach().float().contiguous()

    if hasattr(config, "output_router_logits"):
        add_router_aux_loss(model, config, ids, doc_lengths, tensors)

    prompt = ids[:6]
    with torch.no_grad():
        for use_cache, key in ((True, "gen_greedy_cache"), (False, "gen_greedy_nocache")):
            fresh_rope(model)
            out = model.generate(
                prompt[None],
                attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                max_new_tokens=NEW_TOKENS,
                do_sample=False,
                use_cache=use_cache,
                eos_token_id=config.eos_token_id,
                pad_token_id=config.pad_token_id,
            )
            tensors[key] = out[0].to(torch.int64).contiguous()
    tensors["gen_prompt"] = prompt.clone().to(torch.int64)
    # With dynamic RoPE the cached keys keep the rotation of the length they were computed at,
    # so transformers' own cached and uncached generations may differ; each is checked alone.
    # Longrope the same: its factor set follows the call's length.
    if config.rope_parameters.get("rope_type") not in ("dynamic", "longrope"):
        assert torch.equal(tensors["gen_greedy_cache"], tensors["gen_greedy_nocache"]), name
    save_file(tensors, dir_ / "expected.safetensors")
    # The same batch as `sft debug forward --tokens` input.
    (dir_ / "tokens.json").write_text(
        json.dumps(
            {"input_ids": ids.tolist(), "labels": labels.tolist(), "doc_lengths": doc_lengths}
        )
        + "\n"
    )
    print(f"{name}: T={T} loss={loss.item():.6f} gen={tensors['gen_greedy_cache'].tolist()}")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    only = set(sys.argv[1:])
    for i, (name, ccls, mcls, over, docs) in enumerate(fixtures()):
        if not only or name in only:
            make(name, ccls, mcls, over, docs, seed=1000 + i)


if __name__ == "__main__":
    main()
