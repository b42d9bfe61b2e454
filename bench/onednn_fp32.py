#!/usr/bin/env python3
"""fp32 linear maps of the toy translator's training step through OpenBLAS (torch.mm, as
ropelab and PyTorch run them) and through oneDNN (LibTorch's MKL-DNN linear on
MKL-DNN-layout tensors, weights reordered once outside the timing), at the step's shapes:
forward product and the two backward products of each (grad input, grad weight). Prints the CPU and GFLOP/s per shape and library, median of REPEATS, the order
of the two libraries alternating between rounds.
    python3 bench/onednn_fp32.py [--threads 2] [--repeats 20] [--rounds 3]"""
import argparse
import statistics
import time

import torch


def median_seconds(f, repeats):
    f()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    with open("/proc/cpuinfo") as f:
        model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    print(f"cpu: {model}; torch {torch.__version__}, {a.threads} threads, mkldnn {torch.backends.mkldnn.is_available()}")
    tokens = 64 * 32
    # (name, in, out): the projections of the toy translator (d 256, d_ff 1024, vocab 8000)
    shapes = [("qkv", 256, 768), ("kv (cross)", 256, 512), ("q, out", 256, 256), ("ffn in", 256, 1024),
              ("ffn out", 1024, 256), ("output layer", 256, 8000)]
    for r in range(a.rounds):
        for name, k, n in shapes:
            x, w, b, g = torch.randn(tokens, k), torch.randn(n, k), torch.randn(n), torch.randn(tokens, n)
            flop = 2.0 * tokens * k * n
            # each product as OpenBLAS runs it, and the same product as a oneDNN linear with
            # its operands laid out (and transposed) for it beforehand, untimed: oneDNN's best
            xm, wm, gm = x.to_mkldnn(), w.to_mkldnn(), g.to_mkldnn()
            wtm = w.t().contiguous().to_mkldnn()
            gtm, xtm = g.t().contiguous().to_mkldnn(), x.t().contiguous().to_mkldnn()
            products = {
                "forward": (lambda: torch.addmm(b, x, w.t()), lambda: torch._C._nn.mkldnn_linear(xm, wm, b)),
                "grad input": (lambda: torch.mm(g, w), lambda: torch._C._nn.mkldnn_linear(gm, wtm, None)),
                "grad weight": (lambda: torch.mm(g.t(), x), lambda: torch._C._nn.mkldnn_linear(gtm, xtm, None)),
            }
            parts = []
            for what, (blas, dnnl) in products.items():
                pair = [("openblas", blas), ("onednn", dnnl)]
                if r % 2:
                    pair.reverse()
                gf = {lib: flop / median_seconds(f, a.repeats) / 1e9 for lib, f in pair}
                parts.append(f"{what} openblas {gf['openblas']:6.1f} onednn {gf['onednn']:6.1f} "
                             f"({gf['onednn'] / gf['openblas']:.2f}x)")
            print(f"round {r + 1} {name:12s} {tokens}x{k}x{n} GFLOP/s: " + " | ".join(parts), flush=True)


if __name__ == "__main__":
    main()
