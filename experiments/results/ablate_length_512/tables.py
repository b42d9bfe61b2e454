#!/usr/bin/env python3
"""Prints the tables of README.md from what `ropelab ablate` wrote for the 512-token study.

    python3 experiments/results/ablate_length_512/tables.py [DIR]
    python3 experiments/results/ablate_length_512/tables.py --collect RESULTS_CSV DIR/passkey/cells.csv
    python3 experiments/results/ablate_length_512/tables.py --budget LOG|DIR

DIR (default: this file's directory) holds results.csv of ablate_length_512.yaml, and when
they exist passkey/results.csv and passkey/cells.csv (ablate_length_512_passkey.yaml) and
subword/results.csv (ablate_length_512_subword.yaml). Cells are the mean ± sample sd over
seeds; ratios divide the means over the seeds that have both columns. A cell over fewer seeds
than the grid has per variant (the most rows any variant of that results.csv has) carries
"(n=k)": a grid still under way, or an evaluation that failed.

--collect gathers the per (length, depth) passkey counts of every run in an ablation's
results.csv (the passkey.csv of each row's run directory) into one CSV, so that the pooled
table below needs no run directories; a run without its passkey.csv stops it. A cell that
failed is kept with its error (n/a in the table) when the run has no accuracy at that length
(a learned table's lengths past its end); one at a length the run reports an accuracy for
stops it, since that accuracy leaves the failed depths out.
--budget LOG sums the wall time of the runs an `ablate` log reports as finished (a run resumed
after a stop counts only the part after its last start). --budget DIR (an ablation directory
with its runs unpacked) gives each run's training and evaluation minutes and the machine its
log names, then the sums over the grid's runs and over its fine-tunes and the runs per
machine: the training and evaluation sums of README.md's budgets (the byte grid's logs name
no machine; passkey cells are not evaluation JSONs).

Python 3 standard library only; Wilson's interval is written here from its formula, apart
from ropelab's own.
"""
import csv
import json
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from result_cells import cell, read, seeds_mark, values  # noqa: E402

TRAINED = 512
CONTEXTS = [512, 1024, 2048, 4096, 8192, 16384, 32768]
SLIDING = 4096
SCALINGS = ["linear", "ntk", "dynamic_ntk", "yarn"]

# Published perplexity ratios ppl(k L) / ppl(L), L = 512, non-overlapping windows, each at the
# multiple of L the source reports (README, "Readings"). Press et al. 2022, Table 2 (WikiText-103,
# 247M parameters): lengths 1012, 2512, 8512, 15512 against 512. Kazemnejad et al. 2023, the
# first author's len_gen_lm result files (WikiText-103, t5-base size): 1024, 2048 against 512.
PRESS = {"multiples": [1012 / 512, 2512 / 512, 8512 / 512, 15512 / 512],
         "ppl": {"sinusoidal": [20.05, 43.54, 132.41, 305.65, 406.01],
                 "rotary": [20.07, 21.37, 31.58, 54.98, 79.25],
                 "t5_bias": [19.65, 18.79, 20.41, 43.08, None],
                 "alibi": [19.73, 18.73, 18.41, 18.34, 18.31]}}
KAZEMNEJAD = {"multiples": [2, 4],
              "ppl": {"none": [13.05, 167.84, 319.66], "alibi": [12.67, 12.59, 12.76],
                      "rotary": [12.51, 591.69, 612.65], "t5_bias": [12.72, 13.88, 51.96],
                      "sinusoidal": [13.03, 320.74, 388.73]}}

LABELS = {"{type: rotary, unrotated: 0.25}": "p-rope (1/4 unrotated)",
          "{type: rotary, nope_every: 3}": "rotary + nope every 3rd",
          "{type: none, forget_gate: true}": "fox (forget gate)",
          "{type: none, cope: true}": "cope",
          "{type: none}": "nope"}


def seeds_of(runs):
    """The grid's seeds per variant: the most rows any variant has."""
    return max((len(rows) for rows in runs.values()), default=0)


def ratio(rows, column, base, seeds=None):
    """mean(column) / mean(base) over the seeds that have both."""
    both = [r for r in rows if values([r], column) and values([r], base)]
    if not both:
        return "-"
    a, b = statistics.mean(values(both, column)), statistics.mean(values(both, base))
    return (f"{a / b:.2f}" if b else "-") + seeds_mark(len(both), seeds)


def spec_of(variant):
    """The value a variant sets ("model.position={type: rotary}" -> "{type: rotary}")."""
    return variant.split("=", 1)[1] if "=" in variant else variant


def label(variant):
    if variant.startswith("finetune:"):
        return "fine-tuned, scaling " + spec_of(variant).strip("{}").replace("type: ", "")
    spec = spec_of(variant)
    return LABELS.get(spec, spec.strip("{}").replace("type: ", ""))


def kind(variant):
    """The encoder's type, the key of the published anchors; none for a variant that sets more
    than the type and for a fine-tune, whose value is a scaling ("{type: none}" is no scaling)."""
    spec = spec_of(variant)
    if "," in spec or variant.startswith("finetune:"):
        return None
    return spec.strip("{}").replace("type: ", "").strip()


def header(first, columns):
    print(f"| {first} | " + " | ".join(str(c) for c in columns) + " |")
    print("|---|" + "---|" * len(columns))


def perplexity_tables(runs, unit):
    n = seeds_of(runs)
    base = {v: r for v, r in runs.items() if not v.startswith("finetune")}
    print(f"\nNon-overlapping windows of C {unit}; the last column is ppl(64x) / ppl(1x):\n")
    header("variant", CONTEXTS + ["64x / 1x"])
    for variant, rows in base.items():
        cols = [f"test_ppl@{c}" for c in CONTEXTS]
        print(f"| {label(variant)} | " + " | ".join(cell(rows, c, seeds=n) for c in cols)
              + f" | {ratio(rows, cols[-1], cols[0], n)} |")

    long = [c for c in CONTEXTS if c > SLIDING]
    print(f"\nWindows of C {unit} sliding by {SLIDING} (every {unit[:-1]} after the test text's first C - {SLIDING} "
          f"scored with at least C - {SLIDING} {unit} of history, the first C - {SLIDING} with their position's); "
          "the last column is ppl(64x) / ppl(1x):\n")
    header("variant", [CONTEXTS[0]] + long + ["64x / 1x"])
    for variant, rows in base.items():
        cols = [f"test_ppl@{CONTEXTS[0]}"] + [f"test_ppl@{c}/{SLIDING}" for c in long]
        print(f"| {label(variant)} | " + " | ".join(cell(rows, c, seeds=n) for c in cols)
              + f" | {ratio(rows, cols[-1], cols[0], n)} |")

    for sinks, title in [(0, "alone"), (4, "with 4 sinks")]:
        tag = f"#w{TRAINED}" + (f"s{sinks}" if sinks else "")
        print(f"\nSliding-window attention over {TRAINED} keys, {title} (non-overlapping windows of C):\n")
        header("variant", CONTEXTS)
        for variant, rows in base.items():
            cols = [f"test_ppl@{CONTEXTS[0]}"] + [f"test_ppl@{c}{tag}" for c in CONTEXTS[1:]]
            print(f"| {label(variant)} | " + " | ".join(cell(rows, c, seeds=n) for c in cols) + " |")

    for variant, rows in base.items():
        if not any(values(rows, f"test_ppl@{c}+{s}") for c in CONTEXTS for s in SCALINGS):
            continue
        print(f"\n{label(variant)}, trained at {TRAINED}, evaluated with RoPE scaling at factor C / {TRAINED}, "
              "not retrained (non-overlapping):\n")
        header("scaling", CONTEXTS[1:])
        print("| none | " + " | ".join(cell(rows, f"test_ppl@{c}", seeds=n) for c in CONTEXTS[1:]) + " |")
        for s in SCALINGS:
            print(f"| {s} | " + " | ".join(cell(rows, f"test_ppl@{c}+{s}", seeds=n) for c in CONTEXTS[1:]) + " |")

    tuned = {v: r for v, r in runs.items() if v.startswith("finetune")}
    if tuned:
        print(f"\nRotary fine-tuned at 2048 for 300 updates (non-overlapping / sliding by {SLIDING}):\n")
        header("fine-tune", CONTEXTS)
        for variant, rows in tuned.items():
            cols = [(f"test_ppl@{c}", f"test_ppl@{c}/{SLIDING}" if c > SLIDING else None) for c in CONTEXTS]
            print(f"| {label(variant)} | "
                  + " | ".join(cell(rows, a, seeds=n) + (" / " + cell(rows, b, seeds=n) if b else "") for a, b in cols)
                  + " |")


def anchor_table(runs):
    """Measured ratios ppl(k L) / ppl(L) next to the published ones at the nearest multiple."""
    n = seeds_of(runs)
    by_kind = {kind(v): rows for v, rows in runs.items() if kind(v)}
    print("\nReadings: ppl(k L) / ppl(L), non-overlapping windows, measured here at k = 2, 4, 16, 32 "
          "against Press et al. 2022 (k = 1.98, 4.9, 16.6, 30.3) and Kazemnejad et al. 2023 (k = 2, 4):\n")
    header("encoder", ["here 2x", "Press ~2x", "Kazemnejad 2x", "here 4x", "Press ~4.9x", "Kazemnejad 4x",
                       "here 16x", "Press ~16.6x", "here 32x", "Press ~30x"])

    def published(source, name, i):
        ppl = source["ppl"].get(name)
        if not ppl or i + 1 >= len(ppl) or ppl[i + 1] is None:
            return "-"
        return f"{ppl[i + 1] / ppl[0]:.2f}"

    for name in ["sinusoidal", "rotary", "t5_bias", "alibi", "none"]:
        rows = by_kind.get(name, [])
        here = [ratio(rows, f"test_ppl@{TRAINED * k}", f"test_ppl@{TRAINED}", n) if rows else "-"
                for k in (2, 4, 16, 32)]
        cells = [here[0], published(PRESS, name, 0), published(KAZEMNEJAD, name, 0),
                 here[1], published(PRESS, name, 1), published(KAZEMNEJAD, name, 1),
                 here[2], published(PRESS, name, 2), here[3], published(PRESS, name, 3)]
        print(f"| {LABELS.get('{type: ' + name + '}', name)} | " + " | ".join(cells) + " |")


def wilson(correct, n, z=1.959963984540054):
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (0.0 if correct == 0 else centre - half), (1.0 if correct == n else centre + half)


def passkey_tables(here):
    runs = read(os.path.join(here, "passkey", "results.csv"))
    if not runs:
        return
    lengths = sorted({int(k.split("@")[1]) for rows in runs.values() for k in rows[0] if k.startswith("passkey@")})
    seeds = seeds_of(runs)
    print("\nPasskey accuracy over the five depths (mean ± sd over seeds), by prompt length in bytes:\n")
    header("variant", ["test ppl"] + lengths)
    for variant, rows in runs.items():
        print(f"| {label(variant)} | {cell(rows, f'test_ppl@{TRAINED}', 3, seeds)} | "
              + " | ".join(cell(rows, f"passkey@{n}", seeds=seeds) for n in lengths) + " |")
    counts = {}
    path = os.path.join(here, "passkey", "cells.csv")
    if not os.path.exists(path):
        return
    failed = {}  # (variant, length, depth) -> seeds whose cell has an error
    with open(path, newline="") as f:
        collected = list(csv.DictReader(f))
    # the pooled table and the mean table above must speak of the same runs
    runs_here = {(v, r["seed"]) for v, rows in runs.items() for r in rows}
    runs_collected = {(r["variant"], r["seed"]) for r in collected}
    if runs_here != runs_collected:
        sys.exit(f"{path}: holds {len(runs_collected)} runs where {os.path.join(here, 'passkey', 'results.csv')} "
                 f"has {len(runs_here)} ({len(runs_here - runs_collected)} not collected, "
                 f"{len(runs_collected - runs_here)} not in it): run --collect again")
    for row in collected:
        key = (row["variant"], int(row["length"]), row["depth"])
        if row.get("error"):
            failed.setdefault(key, set()).add(row["seed"])
            continue
        c, n, k = counts.get(key, (0, 0, 0))
        counts[key] = (c + int(row["correct"]), n + int(row["documents"]), k + 1)
    depths = sorted({k[2] for k in list(counts) + list(failed)}, key=float)
    for variant in runs:
        cells = {k[1:]: v for k, v in counts.items() if k[0] == variant}
        errors = {k[1:]: v for k, v in failed.items() if k[0] == variant}
        if not cells and not errors:
            continue
        print(f"\n{label(variant)}: passkeys retrieved over the seeds, accuracy [Wilson 95%] (correct/documents; "
              "every seed is asked the same documents of a cell, so the interval counts a document once per seed "
              "and is narrower than one over as many distinct documents; n/a: the model cannot take the length):\n")
        header("length", [f"depth {d}" for d in depths])
        for n in lengths:
            out = []
            for d in depths:
                if (n, d) not in cells:
                    out.append("n/a" if (n, d) in errors else "-")
                    continue
                c, total, k = cells[(n, d)]
                low, high = wilson(c, total)
                out.append(f"{c / total:.2f} [{low:.2f}, {high:.2f}] ({c}/{total})" + seeds_mark(k, seeds))
            print(f"| {n} | " + " | ".join(out) + " |")


def collect(results_path, out_path):
    rows, missing = [], 0
    if not os.path.exists(results_path):
        sys.exit(f"{results_path}: missing")
    with open(results_path, newline="") as f:
        runs = list(csv.DictReader(f))
    if not runs or "run" not in runs[0]:
        sys.exit(f"{results_path}: no rows with a run column (write it again with `ropelab ablate`)")
    for run in runs:
        table = os.path.join(os.path.dirname(results_path), run["run"], "passkey.csv")
        if not os.path.exists(table):
            print(f"{table}: missing ({run['variant']} seed {run['seed']})", file=sys.stderr)
            missing += 1
            continue
        with open(table, newline="") as f:
            for r in csv.DictReader(f):
                if r["error"] and run.get(f"passkey@{r['length']}", "") not in ("", "nan"):
                    sys.exit(f"{table}: length {r['length']} depth {r['depth']} failed: {r['error']} (while "
                             f"{results_path} gives passkey@{r['length']} = {run[f'passkey@' + r['length']]} for "
                             f"{run['variant']} seed {run['seed']} over the other depths: evaluate it again)")
                rows.append([run["variant"], run["seed"], r["length"], r["depth"], r["documents"], r["correct"],
                             r["error"]])
    if missing:
        sys.exit(f"{results_path}: {missing} runs have no passkey.csv; nothing written")
    with open(out_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "seed", "length", "depth", "documents", "correct", "error"])
        w.writerows(rows)
    print(f"wrote {out_path}: {len(rows)} cells")


def run_budget(out_dir):
    """The time an ablation directory's runs took, from the runs themselves: results.csv's
    train_s (the training's own elapsed time, continued over resumes), the `seconds` of each
    run's eval JSONs, and the machines each run's log names (its `machine:` lines; logs of
    older runs name none). Passkey cells are not eval JSONs: a passkey grid's evaluation
    time is in its logs' `passkey: cell` lines instead."""
    results = os.path.join(out_dir, "results.csv")
    rows = [r for rs in read(results).values() for r in rs]
    if not rows:
        sys.exit(f"{results}: missing or empty")
    for column in ("run", "train_s"):
        if column not in rows[0]:
            sys.exit(f"{results}: no {column} column")
    groups = {"grid runs": [], "fine-tunes": []}
    machines = {}
    print("variant,seed,train_min,eval_min,machine")
    for line, r in enumerate(rows, start=2):
        run_dir = os.path.join(out_dir, r["run"])
        if not os.path.isdir(run_dir):
            sys.exit(f"{run_dir}: missing (unpack the records first: scripts/run_records.sh unpack)")
        try:
            train = float(r["train_s"]) if r["train_s"] else math.nan
        except ValueError:
            sys.exit(f"{results}: row {line}: train_s {r['train_s']!r} is not a number")
        seconds = 0.0
        for name in sorted(os.listdir(run_dir)):
            if name.startswith("eval.") and name.endswith(".json"):
                path = os.path.join(run_dir, name)
                try:
                    with open(path) as f:
                        seconds += float(json.load(f)["seconds"])
                except (OSError, ValueError, KeyError, TypeError) as e:
                    sys.exit(f"{path}: no readable seconds ({e})")
        named = []
        log = run_dir + ".log"
        try:
            with open(log, errors="replace") as f:
                for text in f:
                    m = re.match(r"machine: (.*?), \d+ cores", text)
                    if m and m.group(1) not in named:
                        named.append(m.group(1))
        except FileNotFoundError:
            named = None
        except OSError as e:
            sys.exit(f"{log}: unreadable ({e})")
        machine = "no log" if named is None else " + ".join(named) if named else "not named in the log"
        machines.setdefault(machine, []).append(f"{r['variant']} seed {r['seed']}")
        groups["fine-tunes" if r["variant"].startswith("finetune") else "grid runs"].append((train, seconds))
        print(f"\"{r['variant']}\",{r['seed']},{train / 60:.1f},{seconds / 60:.1f},\"{machine}\"")
    for name, times in groups.items():
        if not times:
            continue
        train = [t for t, _ in times if not math.isnan(t)]
        evals = [e for _, e in times]
        trained = (f"training {sum(train) / 3600:.1f} hours ({min(train) / 60:.0f}-{max(train) / 60:.0f} minutes a "
                   "run)") if train else "no training time"
        missing = f" ({len(times) - len(train)} without train_s)" if len(train) < len(times) else ""
        print(f"{len(times)} {name}: {trained}{missing}, evaluations {sum(evals) / 3600:.1f} hours "
              f"({min(evals) / 60:.1f}-{max(evals) / 60:.1f} minutes a run)")
    for machine, runs in sorted(machines.items(), key=lambda m: -len(m[1])):
        print(f"{len(runs)} runs on {machine}" + (f": {', '.join(runs)}" if len(runs) <= 3 else ""))


def budget(log_path):
    if not os.path.exists(log_path):
        sys.exit(f"{log_path}: missing")
    seconds, runs = 0, 0
    # ablate's durations: 1h17m, 43m10s, 45s
    pattern = re.compile(r"^ablate: finished .* in (?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?; ")
    with open(log_path) as f:
        for line in f:
            m = pattern.match(line)
            if m and any(m.groups()):
                h, mins, s = (int(g or 0) for g in m.groups())
                seconds += h * 3600 + mins * 60 + s
                runs += 1
    print(f"{runs} runs finished, {seconds / 3600:.1f} hours of run time (each run's own wall time; "
          "runs went two at a time)")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--collect":
        return collect(sys.argv[2], sys.argv[3])
    if len(sys.argv) == 3 and sys.argv[1] == "--budget":
        return run_budget(sys.argv[2]) if os.path.isdir(sys.argv[2]) else budget(sys.argv[2])
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1].startswith("-")):
        sys.exit(__doc__)
    here = sys.argv[1] if len(sys.argv) == 2 else os.path.dirname(os.path.abspath(__file__))
    runs = read(os.path.join(here, "results.csv"))
    if not runs:
        sys.exit(f"{os.path.join(here, 'results.csv')}: missing or empty")
    print("## Byte LM")
    perplexity_tables(runs, "bytes")
    anchor_table(runs)
    subword = read(os.path.join(here, "subword", "results.csv"))
    if subword:
        print("\n## Subword LM")
        perplexity_tables(subword, "pieces")
        anchor_table(subword)
    passkey_tables(here)


if __name__ == "__main__":
    main()
