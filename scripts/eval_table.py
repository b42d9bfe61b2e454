#!/usr/bin/env python3
"""The test evaluations an ablation's runs hold so far, as markdown tables.

    python3 scripts/eval_table.py EXPERIMENT OUT

`ropelab ablate` writes results.md once every run of a study is evaluated; a study that
spans machines or days is read before that from the reports in OUT/runs: per run (the
variants of EXPERIMENT's grid, by their labels, and its seeds), the test perplexity at each
context, the RoPE scalings evaluated, and the context gain with its 95% bootstrap interval
(over [W, C) by context, then every bucket of each context with its p-value), as each report
holds them. A blank cell is an evaluation not run yet. Nothing is computed here but the
layout: each number is the report's own.
"""
import glob
import json
import os
import re
import sys

import yaml


def dir_name(variant):
    """The run folder of a variant, as ropelab names it (run/ablation_layout.cpp)."""
    return "".join(c if c.isalnum() or c in ".=-_," else "_" for c in variant)


def variants(experiment):
    """[(label, variant name)] of the experiment's grid, in its order."""
    with open(experiment) as f:  # every value as written (ropelab reads `true` as a word too)
        spec = yaml.load(f, Loader=yaml.BaseLoader)
    grid = spec.get("grid") or {}
    if len(grid) != 1:
        sys.exit(f"eval_table: {experiment}: grid: one key expected, found {len(grid)}")
    (key, values), = grid.items()
    out = []
    for v in values:
        value, label = (v["value"], v.get("label", v["value"])) if isinstance(v, dict) else (v, v)
        out.append((label, f"{key}={value}"))
    return out


def reports(run):
    """Every eval report of the run's folder, parsed."""
    out = []
    for path in sorted(glob.glob(os.path.join(run, "eval.test.ctx*.json"))):
        with open(path) as f:
            out.append(json.load(f))
    return out


def scaling_of(report):
    """'' for the plain evaluation, 'yarn 4' and the like for a scaled one, None otherwise
    (another override, or a checkpoint or precision other than the ones `ablate` evaluates)."""
    if report.get("checkpoint", "best") != "best" or report.get("precision", "fp32") != "fp32":
        return None
    sets = [s for s in report.get("set", []) if not s.startswith("data.eval_tokens=")]
    kind = factor = None
    for s in sets:
        if s.startswith("model.position.scaling.type="):
            kind = s.split("=", 1)[1]
        elif s.startswith("model.position.scaling.factor="):
            factor = s.split("=", 1)[1]
        else:
            return None  # a window, sinks or another override: not in these tables
    return "" if kind is None else f"{kind} {factor}"


def nats(x):
    """A gain: 5 decimals, or 2 significant digits where 5 decimals would read 0."""
    return f"{x:+.5f}" if abs(x) >= 5e-6 or x == 0 else f"{x:+.1e}"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: python3 scripts/eval_table.py EXPERIMENT OUT")
    experiment, out = sys.argv[1], sys.argv[2].rstrip("/")
    rows = []  # (label, seed, reports)
    for label, variant in variants(experiment):
        for run in sorted(glob.glob(os.path.join(out, "runs", dir_name(variant) + ".seed*"))):
            m = re.search(r"\.seed(\d+)$", run)
            if m and os.path.isdir(run):
                rows.append((label, int(m.group(1)), reports(run)))
    if not rows:
        sys.exit(f"eval_table: {out}/runs holds no run of {experiment}'s grid")
    ppl, gains, contexts, scalings, buckets = {}, {}, set(), set(), {}
    for label, seed, rs in rows:
        for r in rs:
            c = r["context"]
            if "window" in r:
                if scaling_of(r) != "":
                    continue
                for key, value in r.items():
                    if key.startswith("gain@"):
                        b = key[len("gain@"):]
                        gains[(label, seed, c, r["window"], b)] = (value, r["ci95@" + b], r["p@" + b])
                        buckets.setdefault((c, r["window"]), set()).add(b)
                continue
            s = scaling_of(r)
            if s is None or r.get("stride", c) != c:
                continue
            contexts.add(c)
            scalings.add(s)
            ppl[(label, seed, c, s)] = r["perplexity"]
    contexts = sorted(contexts)
    print("Test perplexity by context (a column per scaling evaluated):\n")
    for s in sorted(scalings):
        cols = [c for c in contexts if any((l, sd, c, s) in ppl for l, sd, _ in rows)]
        if not cols:
            continue
        print(f"\n{'no scaling' if s == '' else s + ' (factor)'}\n")
        print("| run | seed | " + " | ".join(str(c) for c in cols) + " |")
        print("|---|---|" + "---|" * len(cols))
        for label, seed, _ in rows:
            cells = [f"{ppl[(label, seed, c, s)]:.4f}" if (label, seed, c, s) in ppl else "" for c in cols]
            if any(cells):
                print(f"| {label} | {seed} | " + " | ".join(cells) + " |")
    # every token past the window, by context: the bucket [W, C) of each report
    for w in sorted({w for _, w in buckets}):
        cols = [c for c, w2 in sorted(buckets) if w2 == w and f"{w}-{c}" in buckets[(c, w)]]
        print(f"\n\nContext gain over [{w}, C), by context C (nats/token, 95% interval):\n")
        print("| run | seed | " + " | ".join(str(c) for c in cols) + " |")
        print("|---|---|" + "---|" * len(cols))
        for label, seed, _ in rows:
            cells = []
            for c in cols:
                g = gains.get((label, seed, c, w, f"{w}-{c}"))
                cells.append("" if g is None or g[0] is None else f"{nats(g[0])} [{nats(g[1][0])}, {nats(g[1][1])}]")
            if any(cells):
                print(f"| {label} | {seed} | " + " | ".join(cells) + " |")
    for (c, w) in sorted(buckets):
        names = sorted(buckets[(c, w)], key=lambda b: (int(b.split("-")[0]), -int(b.split("-")[1])))
        print(f"\n\nContext gain at {c} over a window of {w} (nats/token, 95% interval, p):\n")
        print("| run | seed | " + " | ".join(f"[{b.replace('-', ', ')})" for b in names) + " |")
        print("|---|---|" + "---|" * len(names))
        for label, seed, _ in rows:
            cells = []
            for b in names:
                g = gains.get((label, seed, c, w, b))
                if g is None or g[0] is None:
                    cells.append("")
                else:
                    cells.append(f"{nats(g[0])} [{nats(g[1][0])}, {nats(g[1][1])}] p={g[2]:.3f}")
            if any(cells):
                print(f"| {label} | {seed} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
