#!/usr/bin/python3
"""PyTorch Python loads build/libropelab_ops.so and its rotary ops match the eager
GPT-NeoX formula, forward and backward (run by ctest as python_ops)."""
import sys

import torch

torch.ops.load_library(sys.argv[1])


def eager(x, cos, sin, interleaved):
    h = cos.shape[-1]
    if interleaved:
        x1, x2 = x[..., 0:2 * h:2], x[..., 1:2 * h:2]
        out = torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).flatten(-2)
    else:
        x1, x2 = x[..., :h], x[..., h:2 * h]
        out = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)
    return torch.cat([out, x[..., 2 * h:]], -1)


@torch.jit.script
def scripted(a: torch.Tensor, c: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return torch.ops.ropelab.rotary(a, c, s, -2, False)


torch.manual_seed(0)
T, B, H, D, half = 9, 2, 3, 16, 6
angles = torch.arange(T, dtype=torch.double)[:, None] * 10000.0 ** (-torch.arange(half) / half)
cos, sin = angles.cos(), angles.sin()
failures = 0
for interleaved in (False, True):
    q = torch.randn(B, H, T, D, dtype=torch.double, requires_grad=True)
    k = torch.randn(B, H, T, D, dtype=torch.double, requires_grad=True)
    rq, rk = torch.ops.ropelab.rotary_qk(q, k, cos, sin, -2, interleaved)
    ok = torch.allclose(rq, eager(q, cos, sin, interleaved)) and torch.allclose(rk, eager(k, cos, sin, interleaved))
    ok &= torch.autograd.gradcheck(lambda a: torch.ops.ropelab.rotary(a, cos, sin, -2, interleaved), (q,))
    tbhd = torch.randn(T, B, H, D)  # [T, B, H, Dh], the layout of Biderman et al. 2021, float
    ok &= torch.allclose(torch.ops.ropelab.rotary(tbhd, cos.float(), sin.float(), 0, interleaved),
                         eager(tbhd, cos.float()[:, None, None], sin.float()[:, None, None], interleaved), atol=1e-6)
    ok &= torch.allclose(scripted(q, cos, sin), eager(q, cos, sin, False))
    print(f'interleaved={interleaved}: {"ok" if ok else "MISMATCH"}')
    failures += not ok
print(f'{2 - failures} passed, {failures} failed')
sys.exit(1 if failures else 0)
