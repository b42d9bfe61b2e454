"""Golden values for Student's t distribution (CDF and quantiles) and for 95% intervals over
seeds, from SciPy (scipy.stats.t), apart from ropelab's own continued fraction
(src/ropelab/metrics/student_t.cpp).

Run:  /usr/bin/python3 tests/golden/student_t_golden.py   (needs python3-scipy; writes
student_t_golden.json next to it)
"""

import json
import os

import numpy as np
from scipy import stats


def accurate_ppf(p, df):
    """SciPy's quantile polished by Newton's method on SciPy's CDF: t.ppf alone is off by
    about 1e-9 (relative) in the tails, where its CDF is good to about 1e-16."""
    t = stats.t.ppf(p, df)
    for _ in range(5):
        t -= (stats.t.cdf(t, df) - p) / stats.t.pdf(t, df)
    return float(t)


def main():
    cdf = [{"t": t, "df": df, "cdf": float(stats.t.cdf(t, df))}
           for df in (1, 2, 3, 4.5, 9, 30, 200)
           for t in (-7.0, -2.5, -0.3, 0.0, 0.8, 1.96, 4.0, 25.0)]
    quantile = [{"p": p, "df": df, "t": accurate_ppf(p, df)}
                for df in (1, 2, 3, 5, 10, 29, 1000)
                for p in (0.005, 0.025, 0.3, 0.5, 0.975, 0.995)]
    intervals = []
    for values in ([0.4, 0.55, 0.5], [0.1, 0.9], [2.0, 2.0, 2.0, 2.0], [0.31, 0.12, 0.47, 0.2, 0.38]):
        v = np.array(values)
        half = accurate_ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
        intervals.append({"values": values, "mean": float(v.mean()), "low": float(v.mean() - half),
                          "high": float(v.mean() + half)})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "student_t_golden.json")
    with open(path, "w") as f:
        json.dump({"cdf": cdf, "quantile": quantile, "intervals": intervals}, f, indent=1)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
