"""Golden values for the two-stage (cluster, then item) bootstrap of a ratio of sums and for
Holm's step-down adjustment, written from their definitions with NumPy, apart from ropelab's
C++ (src/ropelab/metrics/cluster_bootstrap.cpp).

The bootstrap (Davison and Hinkley 1997, 2.4): the statistic is sum(numerators) /
sum(denominators) over every item; a resample draws as many clusters as there are, with
replacement, and within each drawn cluster as many of its items as it has, with replacement.
The random numbers are SplitMix64 (Steele, Lea and Flood 2014), one 64-bit draw per choice,
mapped to [0, n) by the multiply-high method, the stream ropelab uses so that its draws are
the same on every platform. The interval is NumPy's percentile (linear interpolation) at 2.5
and 97.5 of the resampled statistics; the two-sided p-value for "the ratio is 0" is the one
the percentile interval inverts: twice the share of resampled statistics on the other side
of 0 from the estimate (0 counted as other), 2 (count + 1) / (resamples + 1), at most 1. A
resample whose denominators sum to 0 is dropped.

Holm (1979): sort the m p-values ascending, p_(1) <= ... <= p_(m); the adjusted p_(i) is
max_{j <= i} min(1, (m - j + 1) p_(j)), returned in the input order; NaN entries are left out
of m and stay NaN.

Run:  /usr/bin/python3 tests/golden/bootstrap_golden.py   (writes bootstrap_golden.json next to it)
"""

import json
import math
import os

import numpy as np

MASK = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n):
        return (self.next() * n) >> 64


def bootstrap(clusters, resamples, seed):
    num = np.array([i[0] for c in clusters for i in c], dtype=np.float64)
    den = np.array([i[1] for c in clusters for i in c], dtype=np.float64)
    estimate = num.sum() / den.sum()
    rng = SplitMix64(seed)
    stats = []
    for _ in range(resamples):
        n_sum = d_sum = 0.0
        for _ in range(len(clusters)):
            cluster = clusters[rng.below(len(clusters))]
            for _ in range(len(cluster)):
                item = cluster[rng.below(len(cluster))]
                n_sum += item[0]
                d_sum += item[1]
        if d_sum != 0:
            stats.append(n_sum / d_sum)
    stats = np.array(stats)
    low, high = np.percentile(stats, [2.5, 97.5])
    beyond = np.count_nonzero(stats <= 0) if estimate >= 0 else np.count_nonzero(stats >= 0)
    p = min(1.0, 2 * (beyond + 1) / (len(stats) + 1))
    return {"estimate": estimate, "low": float(low), "high": float(high), "p_value": float(p),
            "resamples": len(stats)}


def holm(p_values):
    present = [(p, i) for i, p in enumerate(p_values) if not math.isnan(p)]
    present.sort(key=lambda t: t[0])
    m = len(present)
    out = [float("nan")] * len(p_values)
    best = 0.0
    for rank, (p, i) in enumerate(present, start=1):
        best = max(best, min(1.0, (m - rank + 1) * p))
        out[i] = best
    return out


def main():
    rng = np.random.default_rng(7)
    cases = []
    # one cluster: the plain bootstrap over items (a run's documents)
    items = [[float(rng.normal(0.02, 0.05) * t), float(t)] for t in rng.integers(50, 400, size=17)]
    cases.append({"clusters": [items], "resamples": 500, "seed": 12345})
    # three clusters of different sizes (seeds x documents), a clear effect
    clusters = []
    for size in (12, 9, 15):
        clusters.append([[float(rng.normal(0.1, 0.04) * t), float(t)] for t in rng.integers(100, 200, size=size)])
    cases.append({"clusters": clusters, "resamples": 400, "seed": 99})
    # no effect, items with zero tokens among them
    clusters = [[[float(rng.normal(0.0, 0.2)), 1.0] for _ in range(6)] + [[0.0, 0.0]] for _ in range(4)]
    cases.append({"clusters": clusters, "resamples": 300, "seed": 2026})
    for case in cases:
        case.update(bootstrap(case["clusters"], case["resamples"], case["seed"]))
    holm_cases = [
        [0.01, 0.04, 0.03, 0.005],
        [0.2, float("nan"), 0.01, 0.6, 0.04],
        [0.5],
    ]
    out = {"bootstrap": cases,
           "holm": [{"p": [None if math.isnan(p) else p for p in ps],
                     "adjusted": [None if math.isnan(a) else a for a in holm(ps)]} for ps in holm_cases]}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bootstrap_golden.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
