#!/usr/bin/env bash
# Whether two ropelab builds give the same results: three small ablations (a translator grid,
# an LM grid with sliding windows, RoPE scaling, windows with sinks, context gain and two
# fine-tunes, and a passkey grid), run with each build on one thread, then compared. Every
# checkpoint must hold the same tensors but for the recorded training seconds
# (bench/compare_checkpoints.py), and every report, hypothesis file, config, results.md and
# significance.csv must be the same text once the output directory's name is replaced and
# "seconds" fields are dropped; results.csv may differ only in train_s.
#   bash bench/compare_ablations.sh OLD_ROPELAB NEW_ROPELAB [WORK_DIR=/tmp/compare_ablations]
# NEW_ENV="NAME=VALUE ..." sets variables for the new side only (a positive control:
# NEW_ENV=ROPELAB_CPU_KERNELS=baseline runs other kernels, whose rounding must show).
set -euo pipefail
old=$(realpath "$1") new=$(realpath "$2") work=${3:-/tmp/compare_ablations}
src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work"
if [ -f "$src/data/corpora/sotu/train.txt" ]; then head -c 20000 "$src/data/corpora/sotu/train.txt" > text.txt
else cut -f1 "$src/data/demo/pairs.tsv" > text.txt; fi
"$new" passkey make --count 40 --length 120 --min-length 100 --seed 3 > passkey.txt
tiny="model.d_model=16, model.heads=2, model.d_ff=16, model.encoder_layers=1, model.decoder_layers=1"
cat > tr.yaml <<YAML
base: $src/experiments/demo_tiny.yaml
set: [data.train=$src/data/demo/pairs.tsv, data.valid=$src/data/demo/pairs.tsv, data.test=$src/data/demo/pairs.tsv, train.steps=20, train.valid_every=10, $tiny]
grid:
  model.position.type: [sinusoidal, rotary]
seeds: [1, 2]
YAML
cat > lm.yaml <<YAML
base: $src/experiments/demo_tiny.yaml
set: [task=lm, data.format=text, tokenizer.type=byte, data.context=16, data.train=$work/text.txt, data.valid=$work/text.txt, data.test=$work/text.txt, train.steps=20, train.valid_every=10, $tiny]
grid:
  model.position.type: [rotary, alibi]
eval_contexts: [16, 64]
eval_strides: [8]
eval_scaling: [yarn, linear]
eval_window_sinks: [0, 2]
eval_context_gain: [16]
finetune:
  from: model.position.type=rotary
  set: [data.context=32, train.steps=5, model.position.scaling.factor=2]
  grid:
    model.position.scaling.type: [none, yarn]
YAML
cat > pk.yaml <<YAML
base: $src/experiments/demo_tiny.yaml
set: [task=lm, data.format=text, tokenizer.type=byte, data.context=128, data.train=$work/passkey.txt, data.valid=$work/passkey.txt, data.test=$work/passkey.txt, train.steps=10, $tiny]
grid:
  model.position.type: [rotary, alibi]
passkey:
  lengths: [100, 140]
  depths: [0, 1]
  documents: 2
YAML
for side in old new; do
  bin=$old && [ $side = new ] && bin=$new
  for e in tr lm pk; do
    extra=() && [ $side = new ] && read -r -a extra <<< "${NEW_ENV:-}"
    env OPENBLAS_NUM_THREADS=1 "${extra[@]}" "$bin" ablate $e.yaml -o out_$side/$e --threads 1 > $e.$side.stdout 2>&1
  done
done
echo "old: $old ($("$old" --version)); new: $new ($("$new" --version))"
problems=0 checkpoints=0 texts=0
for f in $(cd out_old && find . -name 'checkpoint*.pt' | sort); do
  checkpoints=$((checkpoints + 1))
  /usr/bin/python3 "$src/bench/compare_checkpoints.py" "out_old/$f" "out_new/$f" --ignore progress.seconds > cmp.out 2>&1 ||
    { problems=$((problems + 1)); echo "checkpoint differs: $f"; cat cmp.out; }
done
# the first and last line that configs carry from 2ec9bcb on are not compared
normal() { sed "s#$work/out_$1#OUT#g; s#out_$1#OUT#g; s#\"seconds\": *[0-9.e+-]*##g; s#seconds[^,]*##g; /^# ropelab config: /d; /^# end of config\$/d" "out_$1/$2"; }
for f in $(cd out_old && find . \( -name '*.json' -o -name 'hyp*.txt' -o -name config.yaml -o -name results.md \
           -o -name significance.csv -o -name '*.items.tsv' \) | sort); do
  texts=$((texts + 1))
  cmp -s <(normal old "$f") <(normal new "$f") || { problems=$((problems + 1)); echo "text differs: $f"; }
done
for e in tr lm pk; do  # results.csv without its train_s column
  column=$(head -1 out_old/$e/results.csv | tr ',' '\n' | grep -nx train_s | cut -d: -f1)
  for side in old new; do cut -d, -f"$column" --complement out_$side/$e/results.csv > results.$e.$side.csv; done
  cmp -s results.$e.old.csv results.$e.new.csv || { problems=$((problems + 1)); echo "results.csv differs: $e"; }
done
echo "$checkpoints checkpoints, $texts text files and 3 results.csv compared: $problems differ"
[ "$problems" -eq 0 ]
