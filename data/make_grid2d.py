#!/usr/bin/env python3
"""Synthetic 2-D task for the multi-dimensional rotary experiment (experiments/grid2d.yaml).

Each source is a grid of symbols written row by row, every row ended by "/"; the target
is the same grid transposed, written the same way. Read with data.source_layout=grid,
each source token carries its (row, column); in token order the model must count
separators to know where a token sits. Grids are 2-6 rows by 2-6 columns over 16 symbols.

    python3 data/make_grid2d.py [OUT_DIR]      (default data/corpora/grid2d)

Deterministic (seed 2021): writes train.tsv (20000), valid.tsv (500), test.tsv (500) and
test.src / test.ref (the test sources and references, one per line).
"""
import os
import random
import sys

SYMBOLS = [chr(ord("a") + i) for i in range(16)]


def grid_text(grid):
    return " ".join(" ".join(row) + " /" for row in grid)


def make(rng):
    rows, cols = rng.randint(2, 6), rng.randint(2, 6)
    grid = [[rng.choice(SYMBOLS) for _ in range(cols)] for _ in range(rows)]
    transposed = [list(col) for col in zip(*grid)]
    return grid_text(grid), grid_text(transposed)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join("data", "corpora", "grid2d")
    os.makedirs(out, exist_ok=True)
    rng = random.Random(2021)
    seen = set()
    splits = {"train": 20000, "valid": 500, "test": 500}
    data = {}
    for name, count in splits.items():
        pairs = []
        while len(pairs) < count:
            src, tgt = make(rng)
            if src in seen:  # no grid in two splits (or twice in one)
                continue
            seen.add(src)
            pairs.append((src, tgt))
        data[name] = pairs
    for name, pairs in data.items():
        with open(os.path.join(out, name + ".tsv"), "w", encoding="utf-8") as f:
            for src, tgt in pairs:
                f.write(src + "\t" + tgt + "\n")
    with open(os.path.join(out, "test.src"), "w", encoding="utf-8") as s, \
            open(os.path.join(out, "test.ref"), "w", encoding="utf-8") as r:
        for src, tgt in data["test"]:
            s.write(src + "\n")
            r.write(tgt + "\n")
    print("wrote %s: %s" % (out, ", ".join("%s %d" % (k, len(v)) for k, v in data.items())))


if __name__ == "__main__":
    main()
