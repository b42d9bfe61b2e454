#!/usr/bin/env python3
"""Per-seed orderings of an ablation's variants, and each adjacent gap against the spread.

    python3 experiments/results/seed_orderings.py OUT/results.csv METRIC [--higher-better]

Prints markdown: the ranking by mean, the ranking within each seed, and for each pair of
variants adjacent in the mean ranking the gap between means, the larger of the two
standard deviations, and whether every seed orders the pair the same way.
"""
import csv
import statistics
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    path, metric = sys.argv[1], sys.argv[2]
    higher = "--higher-better" in sys.argv[3:]
    values = {}  # variant -> {seed: value}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if metric not in row:
                sys.exit(f"{path}: no column {metric}")
            if row[metric] == "":  # not evaluated for this run (a context past a learned table)
                continue
            values.setdefault(row["variant"], {})[row["seed"]] = float(row[metric])
    seeds = sorted({s for v in values.values() for s in v}, key=int)
    mean = {v: statistics.mean(s.values()) for v, s in values.items()}
    sd = {v: statistics.stdev(s.values()) if len(s) > 1 else 0.0 for v, s in values.items()}
    order = sorted(values, key=lambda v: mean[v], reverse=higher)
    better = "higher" if higher else "lower"
    print(f"Ranking by mean {metric} ({better} is better, best first): " + ", ".join(order) + "\n")
    print("| seed | ranking (best first) | same as the mean ranking |")
    print("|---|---|---|")
    for s in seeds:
        ranked = sorted((v for v in values if s in values[v]), key=lambda v: values[v][s], reverse=higher)
        print(f"| {s} | {', '.join(ranked)} | {'yes' if ranked == order else 'no'} |")
    print()
    print("| pair (better first) | gap between means | larger sd | gap / sd | every seed agrees |")
    print("|---|---|---|---|---|")
    for a, b in zip(order, order[1:]):
        gap = abs(mean[a] - mean[b])
        spread = max(sd[a], sd[b])
        common = [s for s in seeds if s in values[a] and s in values[b]]
        agree = all((values[a][s] > values[b][s]) == higher or values[a][s] == values[b][s] for s in common)
        ratio = f"{gap / spread:.1f}" if spread > 0 else "-"
        print(f"| {a} vs {b} | {gap:.4f} | {spread:.4f} | {ratio} | {'yes' if agree else 'no'} |")


if __name__ == "__main__":
    main()
