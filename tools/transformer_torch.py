#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/transformer_torch.py: the PyTorch eager peer of bench/bench_transformer.c.

The forward layers of a GPT-2 block at the bench's shapes (B=4 T=64 C=768 NH=12,
V=50257, Vp=50304), float32 on GPU 0 with TF32 off, each timed as one op plus
torch.cuda.synchronize() (what the C bench times: launch + sync), median of
--runs runs after a warm-up. Prints a table and writes FILE (one line per op:
"name median_ms min_ms max_ms runs"), which `bench_transformer --torch FILE`
reads to print the ratios in its rows (tools/gpu-run.sh runs both).

  python3 tools/transformer_torch.py [--out FILE] [--runs N]

Ops (llm.c's forward layers written the way a PyTorch user would):
  encoder       wte[tokens] + wpe[:T]
  layernorm     F.layer_norm(x, (C,), w, b, 1e-5)
  matmul_qkv    F.linear(x, W (3C x C), b)                       (cuBLAS)
  attention     llm.c's: split, q @ k^T * scale, causal mask, softmax, @ v, merge heads
  attention_sdpa  F.scaled_dot_product_attention(q, k, v, is_causal=True), merge heads
  gelu          F.gelu(x, approximate="tanh")
  residual      a + b
  softmax       torch.softmax over rows of V = 50257 (a contiguous (B*T, V) tensor)
  matmul_head   F.linear(x, wte (Vp x C), b)                     (cuBLAS)
  block         the whole block: ln1, qkv, attention (unfused), proj, residual, ln2, fc, gelu,
                fcproj, residual; one synchronize
  block_graph   the same block captured once as a CUDA graph (torch.cuda.graph), replayed
                (PyTorch's answer to launch cost: the peer of a replayed cubert recording)
Exit status 0; 0 with a line "skipped: ..." when torch or a GPU is missing.
"""
import argparse
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="write the medians here")
    ap.add_argument("--runs", type=int, default=51)
    args = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001
        print(f"transformer_torch: skipped: PyTorch not importable: {e}")
        return 0
    if not torch.cuda.is_available():
        print("transformer_torch: skipped: torch.cuda.is_available() is False")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev = torch.device("cuda", 0)
    B, T, C, NH, V, Vp = 4, 64, 768, 12, 50257, 50304
    hs = C // NH
    g = torch.Generator(device="cpu").manual_seed(1)

    def rnd(*shape, lo=-1.0, hi=1.0):
        return (torch.rand(*shape, generator=g) * (hi - lo) + lo).to(dev)

    tokens = torch.randint(0, V, (B, T), generator=g).to(dev)
    wte, wpe = rnd(Vp, C), rnd(T, C)
    x, y = rnd(B, T, C, lo=-2, hi=3), rnd(B, T, C)
    ln_w, ln_b = rnd(C, lo=0.5, hi=1.5), rnd(C, lo=-0.5, hi=0.5)
    w_qkv, b_qkv = rnd(3 * C, C, lo=-0.1, hi=0.1), rnd(3 * C, lo=-0.5, hi=0.5)
    qkv = rnd(B, T, 3 * C)
    fc = rnd(B, T, 4 * C, lo=-4, hi=4)
    logits = rnd(B * T, V, lo=-6, hi=6)
    b_head = rnd(Vp, lo=-0.1, hi=0.1)
    mask = torch.tril(torch.ones(T, T, device=dev, dtype=torch.bool))
    scale = 1.0 / (hs ** 0.5)

    def attention_unfused():
        q, k, v = qkv.split(C, dim=2)
        q = q.view(B, T, NH, hs).transpose(1, 2)
        k = k.view(B, T, NH, hs).transpose(1, 2)
        v = v.view(B, T, NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * scale
        att = att.masked_fill(~mask, float("-inf"))
        att = torch.softmax(att, dim=-1)
        return (att @ v).transpose(1, 2).contiguous().view(B, T, C)

    def attention_sdpa():
        q, k, v = qkv.split(C, dim=2)
        q = q.view(B, T, NH, hs).transpose(1, 2)
        k = k.view(B, T, NH, hs).transpose(1, 2)
        v = v.view(B, T, NH, hs).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return o.transpose(1, 2).contiguous().view(B, T, C)

    w_proj, b_proj = rnd(C, C, lo=-0.05, hi=0.05), rnd(C, lo=-0.1, hi=0.1)
    w_fc, b_fc = rnd(4 * C, C, lo=-0.05, hi=0.05), rnd(4 * C, lo=-0.1, hi=0.1)
    w_fcproj, b_fcproj = rnd(C, 4 * C, lo=-0.03, hi=0.03), rnd(C, lo=-0.1, hi=0.1)

    def block():  # llm.c's block forward, the attention as llm.c writes it (unfused)
        ln1 = F.layer_norm(x, (C,), ln_w, ln_b, 1e-5)
        q, k, v = F.linear(ln1, w_qkv, b_qkv).split(C, dim=2)
        q = q.view(B, T, NH, hs).transpose(1, 2)
        k = k.view(B, T, NH, hs).transpose(1, 2)
        v = v.view(B, T, NH, hs).transpose(1, 2)
        att = torch.softmax(((q @ k.transpose(-2, -1)) * scale).masked_fill(~mask, float("-inf")), dim=-1)
        atty = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        res2 = x + F.linear(atty, w_proj, b_proj)
        ln2 = F.layer_norm(res2, (C,), ln_w, ln_b, 1e-5)
        return res2 + F.linear(F.gelu(F.linear(ln2, w_fc, b_fc), approximate="tanh"), w_fcproj, b_fcproj)

    ops = [
        ("encoder", lambda: wte[tokens] + wpe[:T]),
        ("layernorm", lambda: F.layer_norm(x, (C,), ln_w, ln_b, 1e-5)),
        ("matmul_qkv", lambda: F.linear(x, w_qkv, b_qkv)),
        ("attention", attention_unfused),
        ("attention_sdpa", attention_sdpa),
        ("gelu", lambda: F.gelu(fc, approximate="tanh")),
        ("residual", lambda: x + y),
        ("softmax", lambda: torch.softmax(logits, dim=-1)),
        ("matmul_head", lambda: F.linear(x, wte, b_head)),
        ("block", block),
    ]
    rows = []
    print(f"PyTorch {torch.__version__} eager on {torch.cuda.get_device_name(0)}, float32, TF32 off, "
          f"B={B} T={T} C={C} NH={NH} V={V}: launch + synchronize per op, median of {args.runs} runs")
    with torch.no_grad():
        try:  # the block as a CUDA graph: warm up on a side stream, capture once, replay
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    block()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                block()
            ops.append(("block_graph", graph.replay))
        except Exception as e:  # noqa: BLE001
            print(f"  block_graph: skipped: CUDA graph capture failed: {e}")
        for name, fn in ops:
            for _ in range(5):  # warm-up: kernels loaded, cuBLAS handles and workspaces made
                fn()
            torch.cuda.synchronize()
            ts = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                fn()
                torch.cuda.synchronize()
                ts.append((time.perf_counter() - t0) * 1e3)
            med = statistics.median(ts)
            rows.append((name, med, min(ts), max(ts), len(ts)))
            print(f"  {name:16s} {med:9.4f} ms  [{min(ts):.4f} .. {max(ts):.4f}]")
    if args.out:
        with open(args.out, "w") as f:
            for r in rows:
                f.write(f"{r[0]} {r[1]:.6f} {r[2]:.6f} {r[3]:.6f} {r[4]}\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
