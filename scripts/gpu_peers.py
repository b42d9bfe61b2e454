#!/usr/bin/env python3
"""PyTorch peers of ropelab's benchmarks, the same work done PyTorch's best way, for the GPU check
(scripts/gpu_check.sh) to print beside `ropelab bench attention` and `ropelab bench train`.

  scripts/gpu_peers.py attention [--device cuda] [--dtype bfloat16] [--seq 1024 4096 16384]
      [--heads 8] [--head-dim 64] [--batch 1] [--warmup 1] [--repeats 3] [--peers sdpa,flex]
      [--bias alibi,fire,t5,kerple] [--window W] [--sinks S] [--window-positions sequence]
      [--bias-grad yes] [--sdpa-backend auto] [--check-seq 128] [--row-seconds 120]
  scripts/gpu_peers.py train [--device cuda] [--dtype float32|bfloat16] [--d-model 512] [--layers 6]
      [--heads 8] [--ffn 2048] [--vocab 8000] [--batch 64] [--length 32] [--steps 20] [--warmup 3]
      [--dropout 0.1] [--norm post] [--attention-in float32]

attention: causal forward + backward, as ropelab's bench_attention (bench/benchmarks.cpp), by
`sdpa` (no bias) and by compiled `flex` attention adding ropelab's bias (and, --bias-grad yes,
taking its parameters' gradients), after a float32 check of each bias against a dense softmax.
train: the eager peer of `ropelab bench train`'s translator. One JSON object per row, with
"device", "dtype" and "torch", the ropelab command timing the same case (ropelab_equivalent)
and what still differs (ropelab_differs). What this torch lacks gives a row with "skipped", a
case that fails one with "error", and the script goes on (exit 0). The rows need torch >= 2.5;
torch 1.13 makes a CPU dry run.
"""
import argparse
import inspect
import json
import math
import time
from contextlib import nullcontext

import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
except ImportError:
    create_block_mask = flex_attention = None

PAD_ID, EOS_ID = 0, 3  # src/ropelab/data/tokenizer.h: kPadId, kEosId
HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


# --- rows and timing ---------------------------------------------------------------------------

def emit(row):  # JSON has no NaN or infinity: a non-finite float is written as its name
    print(json.dumps({k: str(v) if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}),
          flush=True)


def base_row(bench, args, peer, **fields):
    return {"bench": bench, "peer": peer, "device": args.device, "dtype": args.dtype, "torch": torch.__version__,
            **fields}


def run_row(row, measure_row):
    """Fills `row` from measure_row() and prints it. A failing case (no kernel for it, out of
    memory, a compiler error) becomes a row with "error", and the sweep goes on."""
    try:
        row.update(measure_row())
    except Exception as e:  # noqa: BLE001 (the row reports it)
        row["error"] = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:300]}"
    emit(row)
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(step, device, warmup, repeats, budget_s=float("inf"), inputs=()):
    """Times step() as ropelab's time_repeats (src/ropelab/bench/benchmarks.h): `warmup` untimed
    calls (at least the first, which compiles), then up to `repeats` timed ones, each synchronised,
    fewer once they have taken `budget_s`. Peak memory: from after the first call, `inputs` aside."""
    def timed():
        start = time.perf_counter()
        step()
        sync(device)
        return time.perf_counter() - start
    first = timed()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    for _ in range(warmup - 1):
        step()
    sync(device)
    times = []
    while len(times) < repeats and sum(times) < budget_s:
        times.append(timed())
    times.sort()
    mid = len(times) // 2
    median = times[mid] if len(times) % 2 else 0.5 * (times[mid - 1] + times[mid])
    held = sum(t.numel() * t.element_size() for t in inputs)
    peak = (torch.cuda.max_memory_allocated(device) - held) / 2 ** 20 if device.type == "cuda" else None
    return {"first_call_ms": 1e3 * first, "median_ms": 1e3 * median, "min_ms": 1e3 * times[0],
            "max_ms": 1e3 * times[-1], "repeats": len(times), "peak_mib": peak}


# --- attention: the keys a query sees, and ropelab's biases ---------------------------------------

class Window:
    """Which keys causal query i sees (src/ropelab/ops/attention/key_visibility.h): j <= i, and with
    a window W > 0 only i - j < W or j < S (the sinks). At `sequence` positions (ropelab's bench)
    every key keeps its distance; at `cache` positions (its models' default, WindowPositions in
    attention/backend.h) P = S + W - 1, query i scores the sinks from min(i, P), where StreamingLLM's
    cache holds it, and FIRE's normaliser reads min(i, P)."""

    def __init__(self, window, sinks, positions):
        self.W, self.S = window, sinks if window > 0 else 0
        self.P = self.S + window - 1 if window > 0 and positions == "cache" else 0

    def visible(self, q, kv):
        seen = q >= kv
        return seen & ((kv < self.S) | (q - kv < self.W)) if self.W > 0 else seen

    def query_position(self, q, kv):
        """The position from which query q scores key kv."""
        return torch.where(kv < self.S, q.clamp(max=self.P), q) if self.P > 0 and self.S > 0 else q


def alibi_slopes(heads):
    """ropelab's alibi_slopes: start^h, h = 1..n, start = 2^(-8/n), n the largest power of two
    <= heads, then every other slope of 2n."""
    def geometric(n):
        return [(2.0 ** (-8.0 / n)) ** h for h in range(1, n + 1)]
    power = 1
    while power * 2 <= heads:
        power *= 2
    return geometric(power) + geometric(2 * power)[0::2][:heads - power]


def t5_bucket(relative, num_buckets=32, max_distance=128):
    """ropelab's t5_relative_bucket for a causal stack (relative = key - query): distances
    0..15 exact, then log-spaced up to max_distance."""
    n = (-relative).clamp(min=0)
    exact = num_buckets // 2
    large = exact + (torch.log(n.clamp(min=1).float() / exact) / math.log(max_distance / exact)
                     * (num_buckets - exact)).long()
    return torch.where(n < exact, n, large.clamp(max=num_buckets - 1))


class Bias:
    """An encoder's logit bias, in the form ropelab's attention kernels take it (ScoreBias,
    src/ropelab/ops/attention/score_bias.h), with its learnable `params`, held in q's type as
    ropelab's bench_attention holds them. tables() remakes `t`, the tensors the score_mod reads,
    from the parameters (with autograd when they learn); element(h, qp, q, kv) is the bias of head
    h, query q (scoring from position qp) and key kv as the score_mod reads it; dense(relative) the
    (H, T, T) bias of relative = key - query position, made as the encoder makes it: the reference."""
    params = []


class Relative(Bias):
    """A bias of key - query alone, read from a relative table (H, 2T - 1): column c holds the
    distance c - (T - 1), as ropelab's relative_bias_table."""

    def __init__(self, length, device):
        self.length, self.device, self.t = length, device, {}

    def tables(self):  # refilled in place: the compiled score_mod reads the same dict each step
        self.t["table"] = self.relative(torch.arange(1 - self.length, self.length, device=self.device))

    def element(self, h, qp, q, kv):
        return self.t["table"][h, kv - qp + self.length - 1]

    def dense(self, relative):
        return self.relative(relative)


class Alibi(Relative):
    # Press et al. 2022 (ALiBi), 3: -m_h |i - j|, fixed slopes m_h. Mirrors AlibiEncoder,
    # src/ropelab/position/bias_encoders.cpp.
    def __init__(self, o, window, length, device, dtype):
        super().__init__(length, device)
        self.slopes = torch.tensor(alibi_slopes(o.heads), dtype=torch.float64).float().to(device, dtype)

    def relative(self, relative):  # (...) -> (H, ...)
        return -self.slopes.view(-1, *[1] * relative.dim()) * relative.abs().to(self.slopes.dtype)


class Kerple(Relative):
    # Chi et al. 2022 (KERPLE), 3.2, logarithmic: -r1_h log(1 + r2_h |i - j|), r1 ~ U(0, 2) and
    # r2 ~ U(0, 1) learned, set back to >= 1e-2 before each use (kerple_bound: reset, ropelab's
    # default, as the authors' code). Mirrors KerpleEncoder, src/ropelab/position/bias_encoders.cpp.
    def __init__(self, o, window, length, device, dtype):
        super().__init__(length, device)
        self.params = [(torch.rand(o.heads) * 2.0).to(device, dtype), torch.rand(o.heads).to(device, dtype)]

    def tables(self):
        with torch.no_grad():
            for p in self.params:
                p.clamp_(min=1e-2)
        super().tables()

    def relative(self, relative):
        r1, r2 = (p.view(-1, *[1] * relative.dim()) for p in self.params)
        return -r1 * torch.log1p(r2 * relative.abs().to(r1.dtype))


class T5(Relative):
    # Raffel et al. 2020 (T5), 2.1: a learned (32 buckets, H) table indexed by the bucket of
    # key - query, initialised N(0, d_model^-1/2). Mirrors T5BiasEncoder and t5_relative_bucket,
    # src/ropelab/position/bias_encoders.cpp.
    def __init__(self, o, window, length, device, dtype):
        super().__init__(length, device)
        self.params = [(torch.randn(32, o.heads) / math.sqrt(o.heads * o.head_dim)).to(device, dtype)]

    def relative(self, relative):
        return self.params[0][t5_bucket(relative)].movedim(-1, 0)


class Fire(Bias):
    # Li et al. 2024 (FIRE), 3: mlp_h(psi(|i - j|) / psi(max(L, i))), psi(x) = log(|c| x + 1), mlp
    # 1 -> 32 -> H with ReLU, c (0.1) and L = |l| 512 (l = 1) learned; in a window's cache the
    # normaliser reads min(i, P). Mirrors FireEncoder, src/ropelab/position/bias_encoders.cpp, and
    # its factored form (psi by distance, 1 / (psi + 1e-6) by query), ops/attention/fire_tile_bias.h.
    def __init__(self, o, window, length, device, dtype, hidden=32, threshold=512.0):
        self.hidden, self.out = (nn.Linear(1, hidden).to(device, dtype), nn.Linear(hidden, o.heads).to(device, dtype))
        self.c, self.scale = (torch.tensor(x, device=device, dtype=dtype) for x in (0.1, 1.0))
        self.threshold = threshold
        self.rows = torch.arange(length, device=device, dtype=dtype)  # the normaliser's positions, in c's type
        self.rows = self.rows.clamp(max=float(window.P)) if window.P > 0 else self.rows
        self.params, self.t = [*self.hidden.parameters(), *self.out.parameters(), self.c, self.scale], {}

    def psi(self, x):
        return torch.log(self.c.abs() * x + 1.0)

    def normaliser(self):  # (T)
        return self.psi(torch.maximum(self.rows, (self.scale * self.threshold).abs())) + 1e-6

    def tables(self):  # c and l reach flex through 1-D tables: it scatters no gradient into a 0-d tensor
        distances = torch.arange(self.rows.numel(), device=self.c.device, dtype=self.c.dtype)
        self.t.update(psi=self.psi(distances), inv_norm=1.0 / self.normaliser(), w1=self.hidden.weight.view(-1),
                      b1=self.hidden.bias, w2=self.out.weight, b2=self.out.bias)

    def element(self, h, qp, q, kv):
        t = self.t
        x, out = t["psi"][(qp - kv).abs()] * t["inv_norm"][q], t["b2"][h]
        for k in range(t["w1"].shape[0]):
            unit = torch.full_like(h, k)  # a tensor index: flex scatters gradients through tensor indices alone
            out = out + t["w2"][h, unit] * torch.relu(t["w1"][unit] * x + t["b1"][unit])
        return out

    def dense(self, relative):
        x = self.psi(relative.abs().to(self.c.dtype)) / self.normaliser().unsqueeze(-1)  # (T, T)
        return self.out(torch.relu(self.hidden(x.unsqueeze(-1)))).permute(2, 0, 1)


BIASES = {"alibi": Alibi, "kerple": Kerple, "t5": T5, "fire": Fire}


def make_bias(name, args, window, length, device, dtype, learned=True):
    """The bias `name` (None for none), its parameters requiring gradients when `learned`, its
    tables made (once here when not learned: they are then inputs, as in ropelab's bench)."""
    if name == "none":
        return None
    bias = BIASES[name](args, window, length, device, dtype)
    for p in bias.params:
        p.requires_grad_(learned)
    with nullcontext() if learned else torch.no_grad():
        bias.tables()
    return bias


def score_mod_of(bias, window):
    """flex_attention's score_mod: the score (q k^T / sqrt(Dh): flex's default scale is ropelab's)
    plus the bias, in the score's type (q's: a bf16 case rounds the bias to bf16)."""
    def score_mod(score, b, h, q, kv):
        return score + bias.element(h, window.query_position(q, kv), q, kv).to(score.dtype)
    return None if bias is None else score_mod


def block_mask_of(window, length, device):
    return create_block_mask(lambda b, h, q, kv: window.visible(q, kv), None, None, length, length, device=device)


def attention_inputs(args, length, dtype, device):
    """q, k, v ~ 0.5 N(0, 1) and the output's gradient w, (B, H, T, Dh), as bench_attention's."""
    shape = (args.batch, args.heads, length, args.head_dim)
    q, k, v = [(0.5 * torch.randn(shape, device=device)).to(dtype).requires_grad_() for _ in range(3)]
    return q, k, v, torch.randn(shape, device=device).to(dtype)


def dense_attention(q, k, v, bias, visible):
    """softmax(q k^T / sqrt(Dh) + bias, hidden keys at float's lowest) v: ropelab's reference
    (SoftmaxAttention::reference, src/ropelab/attention/softmax.cpp)."""
    scores = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)
    scores = scores if bias is None else scores + bias
    return torch.softmax(scores.masked_fill(~visible, torch.finfo(scores.dtype).min), -1) @ v


def check_row(args, name, device):
    """float32 at a small T (a window and sinks shrunk to fit): the score_mod's bias against the
    dense one, then flex_attention's output and gradients against the dense softmax's."""
    T = args.check_seq
    window = Window(min(args.window, T // 4), min(args.sinks, T // 8), args.window_positions)
    row = base_row("peer_attention_check", args, "flex", dtype="float32", bias=name, T=T, window=window.W,
                   sinks=window.S, window_positions=args.window_positions)

    def measure_row():
        torch.manual_seed(0)
        bias = make_bias(name, args, window, T, device, torch.float32)
        q, k, v, w = attention_inputs(args, T, torch.float32, device)
        qi = torch.arange(T, device=device).view(-1, 1)
        ki, qp = qi.view(1, -1), window.query_position(qi, qi.view(1, -1))
        dense, out = (bias.dense(ki - qp) if bias else None), {}
        if bias:  # the score_mod's body on broadcast indices: (H, T, T)
            grid = bias.element(torch.arange(args.heads, device=device).view(-1, 1, 1), qp, qi, ki)
            out["bias_max_abs_diff"] = (grid - dense).abs().max().item()
        wrt = [q, k, v] + (bias.params if bias else [])
        ref = dense_attention(q, k, v, dense, window.visible(qi, ki))
        ref_grads = torch.autograd.grad((ref * w).sum(), wrt)
        if flex_attention is None:
            return {**out, "skipped": f"torch {torch.__version__} has no flex_attention"}
        torch._dynamo.reset()
        flex = torch.compile(flex_attention, dynamic=False)
        got = flex(q, k, v, score_mod=score_mod_of(bias, window), block_mask=block_mask_of(window, T, device))
        grads = torch.autograd.grad((got * w).sum(), wrt)
        return {**out, "max_abs_diff": (got - ref).abs().max().item(),
                "grad_max_abs_diff": max((g - r).abs().max().item() for g, r in zip(grads, ref_grads))}
    run_row(row, measure_row)


def attention_row(args, peer, name, length, window, learned):
    """A timing row's fields, with the `ropelab bench attention` case timing the same attention
    (ropelab's chunked kernel, and whichever its `auto` picks) and what still differs."""
    dtype = {"float32": "float"}.get(args.dtype, args.dtype)
    command = (f"ropelab bench attention --json --device {args.device} --mode causal --compare chunked,softmax "
               f"--bias {name} --dtype {dtype} --window {window.W} --sinks {window.S} --seq {length} "
               f"--batch {args.batch} --heads {args.heads} --head-dim {args.head_dim} --repeats {args.repeats}")
    differs = ["ropelab's backward stops at the bias tables; here it goes on to the parameters"] * learned
    if name in ("kerple", "t5", "fire") and not learned:
        differs.append("ropelab takes the learned bias's gradients (here --bias-grad no)")
    if window.S > 0 and args.window_positions == "cache":
        differs.append("ropelab's bench scores the sinks at sequence positions")
    return base_row("peer_attention", args, peer, bias=name, T=length, mode="causal", **{"pass": "forward+backward"},
                    batch=args.batch, heads=args.heads, head_dim=args.head_dim, window=window.W, sinks=window.S,
                    window_positions=args.window_positions, bias_grad=learned, ropelab_equivalent=command,
                    ropelab_differs="; ".join(differs) or None)


def sdpa_backends(choice):
    """[(name, context)] in PyTorch's order of preference, or the one chosen."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return [("default", nullcontext)]
    enums = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION", "cudnn": "CUDNN_ATTENTION", "math": "MATH"}
    names = list(enums) if choice == "auto" else [choice]
    return [(n, lambda e=getattr(SDPBackend, enums[n]): sdpa_kernel(e)) for n in names if hasattr(SDPBackend, enums[n])]


def sdpa_row(args, length, device, dtype):
    row = attention_row(args, "sdpa", "none", length, Window(args.window, args.sinks, args.window_positions), False)
    if not HAS_SDPA or args.window > 0:
        why = f"torch {torch.__version__} has none" if not HAS_SDPA else "it has no sliding window"
        return emit({**row, "skipped": f"scaled_dot_product_attention: {why}"})

    def measure_row():
        q, k, v, w = attention_inputs(args, length, dtype, device)

        def step():
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            torch.autograd.grad((out * w).sum(), (q, k, v))
        refused = []
        for backend, context in sdpa_backends(args.sdpa_backend):  # the first that takes the case
            try:
                with context():
                    timing = measure(step, device, args.warmup, args.repeats, args.row_seconds, (q, k, v, w))
                return {"backend": backend, **timing}
            except RuntimeError as e:
                if "out of memory" in str(e):
                    raise
                refused.append(f"{backend}: {(str(e).strip().splitlines() or [''])[0][:100]}")
        raise RuntimeError(f"no scaled_dot_product_attention backend takes this case ({'; '.join(refused)})")
    run_row(row, measure_row)


def flex_row(args, name, length, device, dtype):
    window = Window(args.window, args.sinks, args.window_positions)
    learned = name in ("kerple", "t5", "fire") and args.bias_grad == "yes"  # ALiBi learns nothing
    row = attention_row(args, "flex", name, length, window, learned)
    if flex_attention is None:
        return emit({**row, "skipped": f"torch {torch.__version__} has no flex_attention"})

    def measure_row():
        torch._dynamo.reset()  # each case compiles afresh: its own compile_s, no recompile limit
        torch.manual_seed(0)
        bias = make_bias(name, args, window, length, device, dtype, learned)
        q, k, v, w = attention_inputs(args, length, dtype, device)
        start = time.perf_counter()
        mask = block_mask_of(window, length, device)
        sync(device)
        mask_s = time.perf_counter() - start
        flex, score_mod = torch.compile(flex_attention, dynamic=False), score_mod_of(bias, window)
        wrt = [q, k, v] + (bias.params if learned else [])

        def step():
            if learned:  # the bias's tables are part of the forward, with their gradients
                bias.tables()
            out = flex(q, k, v, score_mod=score_mod, block_mask=mask)
            torch.autograd.grad((out * w).sum(), wrt)
        fields = measure(step, device, args.warmup, args.repeats, args.row_seconds, (q, k, v, w))
        return {"block_mask_s": mask_s, "compile_s": (fields["first_call_ms"] - fields["median_ms"]) / 1e3, **fields}
    run_row(row, measure_row)


def run_attention(args):
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    if args.check_seq > 0 and "flex" in args.peers:
        for name in args.bias:
            check_row(args, name, device)
    for length in args.seq:
        if "sdpa" in args.peers:
            sdpa_row(args, length, device, dtype)
        for name in args.bias if "flex" in args.peers else []:
            flex_row(args, name, length, device, dtype)


# --- train: the translator of `ropelab bench train` -----------------------------------------------
# Mirrors src/ropelab/model/transformer.cpp and model/attention.cpp at the model.* and train.*
# defaults (model/transformer.h, options/train_options.h): one embedding scaled by sqrt(D) and
# tied to the output projection (no bias); interleaved sinusoids (base 10000) added per call;
# post-LN, LayerNorm(x + Dropout(Sublayer(x))); ReLU feed-forward; dropout after each stack's
# embedding and each sublayer (attention dropout 0); label-smoothed cross-entropy (0.1, torch's
# variant) summed over non-pad targets and taken per token; Adam (0.9, 0.98, 1e-9) at the noam
# rate (lr 1, warmup 4000), no clipping; the gradient norm of every update read back to skip a
# non-finite one, as update_step (train/update_step.cpp). bf16 as ropelab's (model/precision.h):
# autocast matrix products with fp32 master weights; residual stream, LayerNorm, loss and, unless
# --attention-in autocast, attention itself (q, k, v upcast) in fp32.

class CountedDropout(nn.Dropout):
    """Dropout that counts its applications, as ropelab's Dropout (src/ropelab/model/dropout.h)."""
    drops = 0

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        self.drops += 1
        return super().forward(x)


def attend(q, k, v, keep, fp32):
    """(B, H, Tq, Dh) attention; keep (B, 1, Tq|1, Tk) bool, true where a query sees a key."""
    if fp32 and q.dtype != torch.float32:  # ropelab's attend_in_fp32 (attention/backend.h)
        with torch.autocast(q.device.type, enabled=False):
            return attend(q.float(), k.float(), v.float(), keep, False)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep) if HAS_SDPA else dense_attention(q, k, v, None, keep)


class Attention(nn.Module):
    """MultiHeadAttentionImpl: in_proj (3D, D) xavier-uniform with a zero bias, out_proj with a zero
    bias; cross-attention projects queries by the first D rows, keys and values by the rest."""

    def __init__(self, o):
        super().__init__()
        d, self.heads, self.fp32 = o.d_model, o.heads, o.attention_in == "float32"
        self.in_proj_weight = nn.Parameter(nn.init.xavier_uniform_(torch.empty(3 * d, d)))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d))
        self.out_proj = nn.Linear(d, d)
        nn.init.zeros_(self.out_proj.bias)

    def forward(self, x, memory, keep):
        d, w, b = x.shape[-1], self.in_proj_weight, self.in_proj_bias

        def split(t, n):  # (B, T, n D) -> (n, B, H, T, Dh)
            return t.unflatten(-1, (n, self.heads, d // self.heads)).permute(2, 0, 3, 1, 4)
        if memory is None:
            q, k, v = split(F.linear(x, w, b), 3)
        else:
            q, (k, v) = split(F.linear(x, w[:d], b[:d]), 1)[0], split(F.linear(memory, w[d:], b[d:]), 2)
        return self.out_proj(attend(q, k, v, keep, self.fp32).transpose(1, 2).flatten(-2))


class Layer(nn.Module):
    """TransformerLayerImpl: self-attention, cross-attention (decoder) and feed-forward, each with
    its LayerNorm, and the layer's one dropout module."""

    def __init__(self, o, cross):
        super().__init__()
        d, self.pre = o.d_model, o.norm == "pre"
        self.self_attn, self.self_norm = Attention(o), nn.LayerNorm(d)
        if cross:
            self.cross_attn, self.cross_norm = Attention(o), nn.LayerNorm(d)
        self.fc1, self.fc2, self.ffn_norm = nn.Linear(d, o.ffn), nn.Linear(o.ffn, d), nn.LayerNorm(d)
        self.dropout = CountedDropout(o.dropout)

    def residual(self, x, norm, sublayer):
        def out(y):  # the sublayer's output back in the residual stream's type before dropout
            return self.dropout(sublayer(y).to(x.dtype))
        return x + out(norm(x)) if self.pre else norm(x + out(x))

    def forward(self, x, keep, memory=None, memory_keep=None):
        x = self.residual(x, self.self_norm, lambda y: self.self_attn(y, None, keep))
        if memory is not None:
            x = self.residual(x, self.cross_norm, lambda y: self.cross_attn(y, memory, memory_keep))
        return self.residual(x, self.ffn_norm, lambda y: self.fc2(F.relu(self.fc1(y))))


class Stack(nn.Module):
    """StackImpl with the sinusoidal encoder (Vaswani et al. 2017, 3.5; position/encoders.h): sin at
    even, cos at odd dimensions, inv_freq_i = 10000^(-2i/D); a final LayerNorm with pre-LN."""

    def __init__(self, o, cross):
        super().__init__()
        self.layers = nn.ModuleList(Layer(o, cross) for _ in range(o.layers))
        self.final_norm = nn.LayerNorm(o.d_model) if o.norm == "pre" else None
        self.dropout = CountedDropout(o.dropout)
        i = torch.arange(o.d_model // 2, dtype=torch.float64)
        self.register_buffer("inv_freq", torch.pow(10000.0, -2.0 * i / o.d_model).float())

    def forward(self, x, keep, memory=None, memory_keep=None):
        angles = torch.arange(x.shape[1], device=x.device, dtype=torch.float32).unsqueeze(-1) * self.inv_freq
        h = self.dropout(x + torch.stack([angles.sin(), angles.cos()], -1).flatten(-2))
        for layer in self.layers:
            h = layer(h, keep, memory, memory_keep)
        return h if self.final_norm is None else self.final_norm(h)


class Translator(nn.Module):
    """Seq2SeqImpl: the tied embedding (V, D) ~ N(0, 1/D), pad row zero; the encoder with the source
    padding mask, the decoder with the causal and target padding masks, cross-attention with the
    source padding mask."""

    def __init__(self, o):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(o.vocab, o.d_model) / math.sqrt(o.d_model))
        with torch.no_grad():
            self.weight[PAD_ID].zero_()
        self.encoder, self.decoder = Stack(o, cross=False), Stack(o, cross=True)

    def forward(self, src, tgt_in):
        def embed(tokens):
            return F.embedding(tokens, self.weight) * math.sqrt(self.weight.shape[1])
        src_keep = src.ne(PAD_ID)[:, None, None, :]  # (B, 1, 1, S)
        causal = torch.ones(tgt_in.shape[1], tgt_in.shape[1], dtype=torch.bool, device=src.device).tril()
        memory = self.encoder(embed(src), src_keep)
        h = self.decoder(embed(tgt_in), causal & tgt_in.ne(PAD_ID)[:, None, None, :], memory, src_keep)
        return F.linear(h, self.weight)


def ropelab_train_command(args, precision):
    sets = {"model.d_model": args.d_model, "model.heads": args.heads, "model.d_ff": args.ffn,
            "model.encoder_layers": args.layers, "model.decoder_layers": args.layers, "model.dropout": args.dropout,
            "model.norm": args.norm, "train.precision": precision}
    return (f"ropelab bench train --json --device {args.device} " + " ".join(f"--set {k}={v}" for k, v in sets.items())
            + f" --vocab {args.vocab} --batch {args.batch} --length {args.length} --steps {args.steps}"
            + f" --warmup {args.warmup}")


def run_train(args):
    device, precision = torch.device(args.device), {"float32": "fp32", "bfloat16": "bf16"}[args.dtype]
    torch.manual_seed(1)  # train.seed
    model = Translator(args).to(device).train()
    params = list(model.parameters())
    fused = device.type == "cuda" and "fused" in inspect.signature(torch.optim.Adam).parameters
    adam = torch.optim.Adam(params, lr=1.0, betas=(0.9, 0.98), eps=1e-9, **({"fused": True} if fused else {}))
    src, tgt_in, tgt_out = (torch.randint(EOS_ID + 1, args.vocab, (args.batch, args.length), device=device)
                            for _ in range(3))  # bench_train's fixed-shape batch: ordinary tokens, no padding
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if precision == "bf16" else nullcontext()
    state = {"updates": 0, "skipped": 0}

    def update():
        state["updates"] += 1
        with autocast:
            logits = model(src, tgt_in)  # (B, T, V)
        loss = F.cross_entropy(logits.float().flatten(0, 1), tgt_out.flatten(), ignore_index=PAD_ID,
                               label_smoothing=0.1, reduction="sum")
        finite = math.isfinite(loss.item())
        if finite:
            (loss / (args.batch * args.length)).backward()  # per target token (no padding)
            finite = math.isfinite(torch.linalg.vector_norm(torch.stack(torch._foreach_norm(
                [p.grad for p in params]))).item())
        if finite:
            s = state["updates"]
            adam.param_groups[0]["lr"] = args.d_model ** -0.5 * min(s ** -0.5, s * 4000 ** -1.5)
            adam.step()
        state["skipped"] += not finite
        adam.zero_grad(set_to_none=True)

    differs = ["Adam: PyTorch's fused kernel (ropelab's GPU update: LibTorch's per-parameter Adam)"] * fused
    if precision == "bf16" and args.attention_in == "autocast":
        differs.append("attention in autocast's type (ropelab's: fp32)")
    row = base_row("peer_train", args, "eager", precision=precision, attention="sdpa" if HAS_SDPA else "softmax",
                   attention_in=args.attention_in, adam="fused" if fused else "default",
                   parameters=sum(p.numel() for p in params), batch=args.batch, length=args.length, vocab=args.vocab,
                   d_model=args.d_model, layers=args.layers, heads=args.heads, ffn=args.ffn,
                   ropelab_equivalent=ropelab_train_command(args, precision),
                   ropelab_differs="; ".join(differs) or None)

    def measure_row():
        timing = measure(update, device, max(args.warmup, 1), args.steps)
        drops = sum(m.drops for m in model.modules() if isinstance(m, CountedDropout))
        median_s = timing["median_ms"] / 1e3
        return {"dropout_sites": drops // state["updates"], "skipped_updates": state["skipped"],
                "step_median_s": median_s, "step_min_s": timing["min_ms"] / 1e3, "step_max_s": timing["max_ms"] / 1e3,
                "step_median_ms": timing["median_ms"], "steps": timing["repeats"],
                "target_tokens_per_s": args.batch * args.length / median_s, "peak_mib": timing["peak_mib"]}
    run_row(row, measure_row)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    a = commands.add_parser("attention", help="sdpa and flex_attention beside `ropelab bench attention`")
    t = commands.add_parser("train", help="the eager translator beside `ropelab bench train`")
    for p, dtypes in ((a, ["bfloat16", "float32", "float16"]), (t, ["float32", "bfloat16"])):
        p.add_argument("--device", default=device)
        p.add_argument("--dtype", default=dtypes[0], choices=dtypes)
    for flag, default in (("--heads", 8), ("--head-dim", 64), ("--batch", 1), ("--repeats", 3),
                          ("--window", 0), ("--sinks", 0), ("--check-seq", 128)):
        a.add_argument(flag, type=int, default=default)
    a.add_argument("--seq", type=int, nargs="+", default=[1024, 4096, 16384])
    a.add_argument("--warmup", type=int, default=1, help="untimed calls, the first (compiling) one included")
    a.add_argument("--row-seconds", type=float, default=120.0, help="fewer repeats once a case's took this long")
    a.add_argument("--peers", action="append", help="sdpa, flex: repeatable or a comma list (both)")
    a.add_argument("--bias", action="append", help="flex: none, alibi, fire, t5, kerple, as --peers "
                                                   "(alibi,fire,t5,kerple)")
    a.add_argument("--bias-grad", default="yes", choices=["yes", "no"],
                   help="flex: the gradients of a learned bias (ropelab bench attention takes them)")
    a.add_argument("--window-positions", default="sequence", choices=["sequence", "cache"],
                   help="where the sinks score from: sequence (ropelab bench attention) or cache (its models)")
    a.add_argument("--sdpa-backend", default="auto", choices=["auto", "flash", "efficient", "cudnn", "math"])
    for flag, default in (("--d-model", 512), ("--layers", 6), ("--heads", 8), ("--ffn", 2048), ("--vocab", 8000),
                          ("--batch", 64), ("--length", 32), ("--steps", 20), ("--warmup", 3)):
        t.add_argument(flag, type=int, default=default)
    t.add_argument("--dropout", type=float, default=0.1)
    t.add_argument("--norm", default="post", choices=["post", "pre"])
    t.add_argument("--attention-in", default="float32", choices=["float32", "autocast"],
                   help="bf16: attention in fp32 as ropelab's, or in autocast's type")
    args = parser.parse_args()
    if args.command == "train":
        return run_train(args)

    def items(values, default, allowed, flag):
        out = [x for value in values or [default] for x in value.split(",") if x]
        for x in out:
            if x not in allowed:
                parser.error(f"{flag} {x}: expected one of {', '.join(allowed)}")
        return out
    args.peers = items(args.peers, "sdpa,flex", ("sdpa", "flex"), "--peers")
    args.bias = items(args.bias, "alibi,fire,t5,kerple", ("none", *BIASES), "--bias")
    if args.sinks > 0 and args.window <= 0:
        parser.error("--sinks needs --window: sinks are the keys kept beside a window")
    run_attention(args)


if __name__ == "__main__":
    main()
