#!/usr/bin/python3
"""The same training step as `ropelab bench train`, in PyTorch Python with torch.nn.Transformer,
for bench/compare_train.sh's speed comparison. Run with Debian's python3-torch (PyTorch 1.13
on the same LibTorch build as ropelab):

    /usr/bin/python3 bench/pytorch_train.py --threads 2

Model: d_model 256, 3+3 layers, 4 heads, d_ff 1024, dropout 0.1, post-LN (nn.Transformer's
default), shared embeddings scaled by sqrt(d) with the tied output projection, sinusoidal
positions. Step: forward, label-smoothed cross-entropy (0.1, pads ignored), backward, Adam
(0.9, 0.98, 1e-9). Batch: 64 sentences x 32 tokens, source and target, no padding.

Equal work: nn.Transformer does more than ropelab's model unless told otherwise. It drops
attention weights and the feed-forward's hidden activations, and ends the encoder and the
decoder with a LayerNorm; ropelab's model (Vaswani et al. 2017's post-LN layer) drops only
the embeddings and each sublayer's output before the residual sum. So here the attention
modules' dropout is 0, the feed-forward's inner dropout is nn.Identity, encoder.norm and
decoder.norm are None, and no padding masks are passed (the batches have no padding; all-
false masks would make PyTorch merge masks every step). Both sides then have 7,577,600
parameters; --nn-transformer-defaults measures the unmodified nn.Transformer instead.
"""
import argparse
import ctypes
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, vocab, d, heads, layers, ff, dropout, max_len=1024, equal_work=True):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d, padding_idx=0)
        nn.init.normal_(self.embedding.weight, 0, d ** -0.5)
        self.transformer = nn.Transformer(d, heads, layers, layers, ff, dropout, batch_first=True)
        self.equal_work = equal_work
        if equal_work:
            for layer in list(self.transformer.encoder.layers) + list(self.transformer.decoder.layers):
                layer.self_attn.dropout = 0.0  # no dropout on attention weights
                if hasattr(layer, 'multihead_attn'):
                    layer.multihead_attn.dropout = 0.0
                layer.dropout = nn.Identity()  # the feed-forward's inner dropout
            self.transformer.encoder.norm = None
            self.transformer.decoder.norm = None
        self.dropout = nn.Dropout(dropout)
        self.scale = math.sqrt(d)
        pos = torch.arange(max_len).unsqueeze(1)
        inv = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe = torch.zeros(max_len, d)
        pe[:, 0::2] = torch.sin(pos * inv)
        pe[:, 1::2] = torch.cos(pos * inv)
        self.register_buffer('pe', pe)

    def embed(self, tokens):
        return self.dropout(self.embedding(tokens) * self.scale + self.pe[:tokens.size(1)])

    def forward(self, src, tgt):
        causal = self.transformer.generate_square_subsequent_mask(tgt.size(1)).to(src.device)
        if self.equal_work:  # unpadded batches: no padding masks
            h = self.transformer(self.embed(src), self.embed(tgt), tgt_mask=causal)
        else:
            h = self.transformer(self.embed(src), self.embed(tgt), tgt_mask=causal,
                                 src_key_padding_mask=src.eq(0), tgt_key_padding_mask=tgt.eq(0),
                                 memory_key_padding_mask=src.eq(0))
        return F.linear(h, self.embedding.weight)


def dropout_sites(model, src, tgt):
    """Dropout applications with p > 0 in one training forward (nn.Dropout calls, counted with
    hooks: the embedding dropout runs twice), and attention modules that drop their weights
    (inside F.multi_head_attention_forward, where no hook sees it)."""
    calls = []
    hooks = [m.register_forward_hook(lambda *_: calls.append(1))
             for m in model.modules() if isinstance(m, nn.Dropout) and m.p > 0]
    with torch.no_grad():
        model(src, tgt)
    for h in hooks:
        h.remove()
    attention = sum(1 for m in model.modules() if isinstance(m, nn.MultiheadAttention) and m.dropout > 0)
    return len(calls), attention


def blas_core():
    """OpenBLAS's core type in this process (the library torch loaded), '' for another BLAS."""
    try:
        name = ctypes.CDLL('libblas.so.3').openblas_get_corename
    except (OSError, AttributeError):
        return ''
    name.restype = ctypes.c_char_p
    return name().decode()


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--threads', type=int, default=2)
    p.add_argument('--vocab', type=int, default=8000)
    p.add_argument('--batch', type=int, default=64)
    p.add_argument('--length', type=int, default=32)
    p.add_argument('--steps', type=int, default=20)
    p.add_argument('--warmup', type=int, default=3)
    p.add_argument('--device', default='cpu')
    p.add_argument('--json', action='store_true')
    p.add_argument('--bf16', action='store_true',
                   help="forward and loss under torch.autocast('cpu', dtype=torch.bfloat16)")
    p.add_argument('--nn-transformer-defaults', action='store_true',
                   help="nn.Transformer as it comes: more dropout, final norms, padding masks")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    dev = torch.device(a.device)
    model = Model(a.vocab, 256, 4, 3, 1024, 0.1, equal_work=not a.nn_transformer_defaults).to(dev).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    src = torch.randint(4, a.vocab, (a.batch, a.length), device=dev)
    tgt_in = torch.randint(4, a.vocab, (a.batch, a.length), device=dev)
    tgt_out = torch.randint(4, a.vocab, (a.batch, a.length), device=dev)

    def step():
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.bf16):
            logits = model(src, tgt_in)
            loss = F.cross_entropy(logits.view(-1, a.vocab), tgt_out.view(-1), ignore_index=0,
                                   label_smoothing=0.1, reduction='sum')
        (loss / tgt_out.numel()).backward()
        opt.step()
        opt.zero_grad()
        if dev.type == 'cuda':
            torch.cuda.synchronize()

    for _ in range(a.warmup):
        step()
    times = []
    for _ in range(a.steps):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    med = statistics.median(times)
    params = sum(p.numel() for p in model.parameters())
    tps = a.batch * a.length / med
    drops, attention_drops = dropout_sites(model, src, tgt_in)
    if a.json:
        print(json.dumps({'bench': 'pytorch_train', 'threads': a.threads, 'precision': 'bf16' if a.bf16 else 'fp32',
                          'parameters': params,
                          'dropout_sites': drops, 'attention_weight_dropout': attention_drops,
                          'final_norms': model.transformer.encoder.norm is not None,
                          'step_median_s': med, 'target_tokens_per_s': tps, 'blas_core': blas_core()}))
    else:
        print(f'pytorch nn.Transformer step: {params} parameters, batch {a.batch} x {a.length}, {a.threads} threads, '
              f'{drops} dropout applications, {attention_drops} attention modules dropping weights, '
              f'OpenBLAS core {blas_core() or "(not OpenBLAS)"}')
        print(f'  step median {1e3 * med:.1f} ms (min {1e3 * min(times):.1f}, max {1e3 * max(times):.1f})')
        print(f'  {tps:.0f} target tokens/s')


if __name__ == '__main__':
    main()
