#!/usr/bin/env bash
# The grid2d comparison: 2-D rotary vs 1-D rotary vs absolute encodings in
# the encoder, on grid transposition (experiments/grid2d.yaml). Trains every encoder
# type for each seed, evaluates greedy decoding on the 500 test grids, and writes
# experiments/results/grid2d.table.md. Finished runs are skipped, so a stopped run resumes.
#   bash experiments/grid2d.sh [SEEDS...]        (default seeds: 1 2 3)
# Environment: ROPELAB (default build/ropelab), RUNS (default runs/grid2d), THREADS (1).
set -euo pipefail
cd "$(dirname "$0")/.."
ROPELAB=${ROPELAB:-build/ropelab}
RUNS=${RUNS:-runs/grid2d}
THREADS=${THREADS:-1}
SEEDS=("$@")
[ ${#SEEDS[@]} -gt 0 ] || SEEDS=(1 2 3)
[ -f data/corpora/grid2d/train.tsv ] || python3 data/make_grid2d.py
ENCODERS=(rotary_nd rotary sinusoidal learned)
for seed in "${SEEDS[@]}"; do
  for enc in "${ENCODERS[@]}"; do
    dir="$RUNS/$enc.seed$seed"
    if [ ! -f "$dir/eval.test.json" ]; then
      rm -rf "$dir"
      echo "== $enc seed $seed"
      "$ROPELAB" train experiments/grid2d.yaml --set model.encoder_position.type="$enc" \
        --set train.seed="$seed" --threads "$THREADS" -o "$dir" | grep -E '^(valid|done)'
      "$ROPELAB" eval --run "$dir" --split test --threads "$THREADS" | grep -E '^(BLEU|exact)'
    fi
  done
done
python3 - "$RUNS" "${SEEDS[@]}" <<'PY'
import json, os, statistics, sys
runs, seeds = sys.argv[1], sys.argv[2:]
rows = []
for enc in ["rotary_nd", "rotary", "sinusoidal", "learned"]:
    exact, bleu, ppl, secs = [], [], [], []
    for s in seeds:
        d = os.path.join(runs, "%s.seed%s" % (enc, s))
        e = json.load(open(os.path.join(d, "eval.test.json")))
        exact.append(100 * e["exact_match"]); bleu.append(e["bleu"]); ppl.append(e["perplexity"])
        for line in open(os.path.join(d, "metrics.jsonl")):
            m = json.loads(line)
            if m["event"] == "train": last = m["elapsed_s"]
        secs.append(last)
    sd = lambda xs: statistics.stdev(xs) if len(xs) > 1 else 0.0
    rows.append("| %s | %.1f ± %.1f | %.2f ± %.2f | %.3f ± %.3f | %s | %.0f |" % (
        enc, statistics.mean(exact), sd(exact), statistics.mean(bleu), sd(bleu),
        statistics.mean(ppl), sd(ppl), " / ".join("%.1f" % x for x in exact), statistics.mean(secs)))
os.makedirs("experiments/results", exist_ok=True)
with open("experiments/results/grid2d.table.md", "w") as f:
    f.write("| encoder position | exact match % (mean ± sd) | BLEU | test perplexity | exact match per seed | train s |\n")
    f.write("|---|---|---|---|---|---|\n")
    f.write("\n".join(rows) + "\n")
print(open("experiments/results/grid2d.table.md").read())
PY
