#!/usr/bin/python3
"""PyTorch Python loads build/libropelab_ops.so and torch.ops.ropelab.attention equals
softmax(q k^T / sqrt(Dh) + bias) v written out here in float64, with every bias form (dense,
relative, a forget gate's cumulative log values, FIRE's MLP), causal masks, windows, sinks and
key padding, forward and backward, on both kernels (run by ctest as python_attention_op)."""
import math
import sys

import torch

torch.ops.load_library(sys.argv[1])


def fire_dense(fire, tq, tk):
    """FIRE (Li et al. 2024): mlp_h(psi[|j - a|] * inv_norm[i]), a = i + Tk - Tq."""
    psi, inv_norm, w1, b1, w2, b2 = fire
    i = torch.arange(tq)[:, None]
    j = torch.arange(tk)[None, :]
    x = psi[(j - (i + tk - tq)).abs()] * inv_norm[:, None]  # (Tq, Tk)
    hidden = torch.relu(x[..., None] * w1 + b1)  # (Tq, Tk, K)
    return torch.einsum('tsk,hk->hts', hidden, w2) + b2[:, None, None]


def reference(q, k, v, pad=None, bias=None, relative=None, forget=None, fire=(), causal=False, window=0, sinks=0):
    b, h, tq, d = q.shape
    tk = k.shape[2]
    s = q @ k.transpose(-1, -2) / math.sqrt(d)
    i = torch.arange(tq)[:, None]
    j = torch.arange(tk)[None, :]
    a = i + tk - tq
    if bias is not None:
        s = s + bias
    if relative is not None:
        s = s + relative[:, j - i + tq - 1]
    if forget is not None:
        s = s + forget[:, :, a[:, 0], None] - forget[:, :, None, :]
    if fire:
        s = s + fire_dense(fire, tq, tk)
    visible = torch.ones(tq, tk, dtype=torch.bool)
    if causal:
        visible &= j <= a
    if window > 0:
        visible &= ((a - j).abs() < window) | (j < sinks)
    visible = visible.expand(b, h, tq, tk)
    if pad is not None:
        visible = visible & ~pad[:, None, None, :]
    sees = visible.any(-1, keepdim=True)
    p = torch.softmax(s.masked_fill(~visible, -math.inf).masked_fill(~sees, 0.0), -1) * sees
    return p @ v


def make_case(name, dtype, device, tq, tk, causal, window=0, sinks=0, padded=False, forms=()):
    g = torch.Generator().manual_seed(len(name) * 7919)
    b, h, d, hidden = 2, 3, 16, 5

    def rand(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g, dtype=torch.double) * scale).to(device, dtype).requires_grad_()

    args = dict(q=rand(b, h, tq, d), k=rand(b, h, tk, d), v=rand(b, h, tk, d))
    if padded:
        pad = torch.zeros(b, tk, dtype=torch.bool)
        pad[1, :3] = True  # batch 1's first query (causal) sees no key: a zero row
        pad[0, -2:] = True
        args['pad'] = pad.to(device)
    if 'dense' in forms:
        args['bias'] = rand(1, h, tq, tk, scale=0.5)
    if 'relative' in forms:
        args['relative'] = rand(h, tq + tk - 1, scale=0.5)
    if 'forget' in forms:
        log_f = -torch.rand(b, h, tk, generator=g, dtype=torch.double) * 0.2
        args['forget'] = log_f.cumsum(-1).to(device, dtype).requires_grad_()
    if 'fire' in forms:
        n = max(tq, tk)
        psi = torch.log1p(torch.arange(n, dtype=torch.double) * 0.3)
        inv_norm = 1.0 / torch.log1p(torch.arange(tk - tq, tk, dtype=torch.double) * 0.3 + 1.0)
        fire = [psi, inv_norm, torch.randn(hidden, generator=g, dtype=torch.double),
                torch.randn(hidden, generator=g, dtype=torch.double), torch.randn(h, hidden, generator=g, dtype=torch.double),
                torch.randn(h, generator=g, dtype=torch.double)]
        args['fire'] = [t.to(device, dtype).requires_grad_() for t in fire]
    return args, dict(causal=causal, window=window, sinks=sinks)


def leaves(args):
    out = [args[n] for n in ('q', 'k', 'v', 'bias', 'relative', 'forget') if n in args]
    return out + list(args.get('fire', []))


def run_op(args, flags, kernel):
    return torch.ops.ropelab.attention(args['q'], args['k'], args['v'], args.get('pad'), args.get('bias'),
                                       args.get('relative'), args.get('forget'), args.get('fire'),
                                       flags['causal'], flags['window'], flags['sinks'], kernel)


def outputs_and_grads(fn, args):
    out = fn()
    weights = torch.linspace(-1.0, 1.0, out.numel(), dtype=torch.double).reshape(out.shape).to(out)
    grads = torch.autograd.grad((out * weights).sum(), leaves(args), allow_unused=True)
    return [out] + [torch.zeros_like(t) if gr is None else gr for t, gr in zip(leaves(args), grads)]


CASES = [
    ('dense, causal, across query tiles', 70, 70, True, 0, 0, False, ('dense',)),
    ('relative, window and sinks, padding', 70, 70, True, 16, 4, True, ('relative',)),
    ('forget gate and FIRE, cached queries', 5, 70, True, 0, 0, False, ('forget', 'fire')),
    ('two-sided window, relative, padding', 40, 40, False, 7, 0, True, ('relative',)),
    ('every form at once', 33, 33, True, 9, 2, True, ('dense', 'relative', 'forget', 'fire')),
]


def check(device, dtype, kernel, tolerance):
    failures = 0
    for name, tq, tk, causal, window, sinks, padded, forms in CASES:
        args, flags = make_case(name, dtype, device, tq, tk, causal, window, sinks, padded, forms)
        mine = outputs_and_grads(lambda: run_op(args, flags, kernel), args)
        gold_args = {n: ([t.detach().double().cpu().requires_grad_() for t in x] if n == 'fire' else
                         x.detach().cpu() if n == 'pad' else x.detach().double().cpu().requires_grad_())
                     for n, x in args.items()}
        gold = outputs_and_grads(lambda: reference(**gold_args, **flags), gold_args)
        worst = max((m.double().cpu() - g).abs().max().item() / (1.0 + g.abs().max().item()) for m, g in zip(mine, gold))
        ok = worst <= tolerance
        print(f'{device} {str(dtype):13s} {kernel:9s} {name}: {"ok" if ok else "MISMATCH"} (relative error {worst:.2e})')
        failures += not ok
    return failures


@torch.jit.script
def scripted(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.ops.ropelab.attention(q, k, v, causal=True, window=3)


failures = 0
runs = 0
for kernel in ('streaming', 'chunked', 'auto'):
    failures += check('cpu', torch.double, kernel, 1e-10)
    failures += check('cpu', torch.float, kernel, 1e-4)
    runs += 2 * len(CASES)
if torch.cuda.is_available():
    for dtype, tolerance in ((torch.double, 1e-10), (torch.float, 1e-3)):
        failures += check('cuda', dtype, 'auto', tolerance)
        runs += len(CASES)
q = torch.randn(1, 2, 12, 8, dtype=torch.double)
script_ok = torch.allclose(scripted(q, q, q), reference(q, q, q, causal=True, window=3))
print(f'TorchScript: {"ok" if script_ok else "MISMATCH"}')
failures += not script_ok
try:
    torch.ops.ropelab.attention(q, q, q, sinks=2)
    failures += 1
    print('sinks without a window: accepted (MISMATCH)')
except RuntimeError as error:
    print('sinks without a window refused:', str(error).splitlines()[0])
print(f'{runs + 1 - failures} passed, {failures} failed')
sys.exit(1 if failures else 0)
