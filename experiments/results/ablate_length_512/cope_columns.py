#!/usr/bin/env python3
"""Which of CoPE's position columns a run's training reached.

    /usr/bin/python3 experiments/results/ablate_length_512/cope_columns.py CHECKPOINT [COLUMN ...]

CHECKPOINT is a ropelab checkpoint (checkpoint_best.pt or checkpoint_last.pt of a run with
`cope: true`). For each layer's position table E (head dim x P, starting at 0) it prints
the Euclidean norm of the columns asked (default: 0, 1, 2, 4, 8, ... up to P - 1) and the
last column whose norm is above 1e-6, the highest count that training moved. Needs PyTorch
(python3-torch); the checkpoint is a LibTorch archive, read with torch.jit.load.
"""
import sys


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    import torch

    try:
        module = torch.jit.load(argv[1], map_location="cpu")
    except (RuntimeError, ValueError, OSError) as e:
        sys.exit(f"cope_columns: {argv[1]}: not a ropelab checkpoint ({str(e).splitlines()[0]})")
    tables = [(n, t) for n, t in module.named_parameters() if n.endswith("cope_embedding")]
    if not tables:
        sys.exit(f"cope_columns: {argv[1]}: no cope_embedding parameter (a run without cope: true?)")
    for name, table in tables:
        norms = table.detach().double().norm(dim=0)
        p = norms.numel()
        columns = [int(c) for c in argv[2:]] or sorted({0, 1, 2, p - 1} | {2**k for k in range(2, 16) if 2**k < p})
        bad = [c for c in columns if not 0 <= c < p]
        if bad:
            sys.exit(f"cope_columns: column {bad[0]} is outside 0 ... {p - 1}")
        moved = (norms > 1e-6).nonzero()
        last = int(moved.max()) if moved.numel() else -1
        cells = " ".join(f"{c}:{float(norms[c]):.3f}" for c in columns)
        print(f"{name} P={p} last moved column {last}; norms {cells}")


if __name__ == "__main__":
    main(sys.argv)
