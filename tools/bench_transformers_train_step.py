#!/usr/bin/env python3
"""Time transformers' forward+backward (torch CPU, fp32) on the batch bench_train_step uses.

Same model shape (Qwen3-0.6B by default: 28 layers, hidden 1024, intermediate 3072, 16 heads,
8 kv heads, head_dim 128, vocab 151936, tied), random weights, and a 1,024-token batch of four
documents (3/8, 1/4, 3/16 and the rest of the tokens). transformers has no padding-free path on
CPU without flash-attention, so each document runs as its own sequence and the summed loss
gets one backward: the same work as one packed batch. Threads: torch.set_num_threads(--threads).

Run: OPENBLAS_CORETYPE=Haswell ~/.venv-sft/bin/python tools/bench_transformers_train_step.py
"""

import argparse
import time

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=28)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = Qwen3Config(
        vocab_size=151936,
        hidden_size=1024,
        intermediate_size=3072,
        num_hidden_layers=args.layers,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        tie_word_embeddings=True,
        rope_theta=1000000.0,
        max_position_embeddings=40960,
        attn_implementation="sdpa",
    )
    t0 = time.time()
    model = Qwen3ForCausalLM(cfg).float()
    model.train()
    init_s = time.time() - t0
    T = args.tokens
    docs = [T * 3 // 8, T // 4, T * 3 // 16]
    docs.append(T - sum(docs))
    ids = torch.randint(0, cfg.vocab_size, (T,))

    C, I, H, Hkv, D, V, L = 1024, 3072, 16, 8, 128, cfg.vocab_size, args.layers
    linear_params = L * (C * H * D * 2 + C * Hkv * D * 2 + 3 * C * I) + V * C
    pairs = sum(n * (n + 1) / 2 for n in docs)
    flops = 6 * T * linear_params + 3 * 4 * H * D * pairs * L
    n_params = sum(p.numel() for p in model.parameters())
    print(f"transformers {__import__('transformers').__version__}, torch {torch.__version__}, "
          f"{L} layers, {n_params / 1e6:.1f}M parameters, init {init_s:.1f} s, threads {args.threads}")

    times = []
    for step in range(args.steps + 1):
        model.zero_grad(set_to_none=False)
        t0 = time.time()
        loss_sum, count, start = 0.0, 0, 0
        for n in docs:
            x = ids[start : start + n][None]
            logits = model(input_ids=x).logits[0, :-1]
            tgt = ids[start + 1 : start + n]
            loss_sum = loss_sum + torch.nn.functional.cross_entropy(logits.float(), tgt, reduction="sum")
            count += n - 1
            start += n
        loss = loss_sum / count
        t1 = time.time()
        loss.backward()
        t2 = time.time()
        print(f"step {step}: loss {loss.item():.4f}  forward {t1 - t0:.2f} s  forward+backward {t2 - t0:.2f} s"
              + ("  (warm-up)" if step == 0 else ""))
        if step > 0:
            times.append(t2 - t0)
    mean = sum(times) / len(times)
    print(f"tokens/s {T / mean:.1f} (mean of {len(times)} steps, best {T / min(times):.1f}); "
          f"model GFLOP/step {flops / 1e9:.1f}; achieved {flops / mean / 1e9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
