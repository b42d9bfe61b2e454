"""Golden values for Wilson's score interval (E. B. Wilson, 1927, "Probable inference, the
law of succession, and statistical inference", JASA 22:209-212).

The interval is the set of proportions p that the score test does not reject at 95%:
|k/n - p| <= z * sqrt(p * (1 - p) / n), z the standard normal's 97.5% quantile. This script
finds its two ends by bisection on that inequality, not by the closed form ropelab uses,
with the Python standard library only (statistics.NormalDist for z).

Run:  python3 tests/golden/wilson_golden.py   (writes wilson_golden.json next to it)
"""

import json
import math
import os
import statistics

Z = statistics.NormalDist().inv_cdf(0.975)


def accepted(k, n, p):
    return abs(k / n - p) <= Z * math.sqrt(p * (1.0 - p) / n)


def boundary(k, n, inside, outside):
    """The point between `inside` (accepted) and `outside` (rejected)."""
    for _ in range(200):
        middle = (inside + outside) / 2.0
        if accepted(k, n, middle):
            inside = middle
        else:
            outside = middle
    return (inside + outside) / 2.0


def interval(k, n):
    centre = k / n
    if 0 < k < n:
        return boundary(k, n, centre, 0.0), boundary(k, n, centre, 1.0)
    # at 0 or n successes p = k/n itself is on the boundary of the test (0 = 0): the
    # other end is found from a point just inside
    if k == 0:
        return 0.0, boundary(k, n, 1e-300, 1.0)
    return boundary(k, n, 1.0 - 1e-16, 0.0), 1.0


def main():
    cases = []
    for n in (1, 2, 10, 20, 60, 1000):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            low, high = interval(k, n)
            cases.append({"successes": k, "trials": n, "low": low, "high": high})
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "wilson_golden.json"), "w") as fh:
        json.dump({"generator": "tests/golden/wilson_golden.py: the score test inverted by bisection",
                   "z": Z, "intervals": cases}, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
