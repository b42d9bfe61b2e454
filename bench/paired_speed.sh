#!/usr/bin/env bash
# `ropelab score` with and without paired tests on two systems' outputs for the same test
# set: wall time of each configuration, ROUNDS rounds, configurations in rotating order;
# the paired tests' own cost is the difference to the same metrics without a test (the
# process start, reading the files and the sentence statistics are in both). With
# SACREBLEU_SRC set (a sacreBLEU checkout), sacreBLEU's CLI runs the paired bootstrap on
# the same files once, for scale.
#   bash bench/paired_speed.sh ROPELAB REF HYP_BASELINE HYP_SYSTEM [ROUNDS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
ropelab=$1 ref=$2 base=$3 sys=$4 rounds=${5:-3}
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores; $(wc -l <"$ref") lines"
echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src apps || echo ' (uncommitted changes)')"
configs=(
  "-m bleu chrf"
  "-m bleu chrf --paired-bs"
  "-m bleu chrf ter"
  "-m bleu chrf ter --paired-bs"
  "-m bleu chrf ter --paired-ar"
)
wall() { /usr/bin/time -f %e "$ropelab" score --ref "$ref" --hyp "$base" --hyp "$sys" $1 2>&1 >/dev/null | tail -1; }
declare -A times
for r in $(seq "$rounds"); do
  for k in $(seq 0 $((${#configs[@]} - 1))); do
    c=${configs[$(((k + r) % ${#configs[@]}))]}
    times[$c]="${times[$c]:-} $(wall "$c")"
  done
done
for c in "${configs[@]}"; do printf '%-34s %s s\n' "$c" "${times[$c]}"; done
table=$("$ropelab" score --ref "$ref" --hyp "$base" --hyp "$sys" -m bleu chrf ter --paired-bs)
echo "$table" | sed -n 1,4p
if [ -n "${SACREBLEU_SRC:-}" ]; then
  runner=$(mktemp --suffix .py) tfile=$(mktemp)
  trap 'rm -f "$runner" "$tfile"' EXIT
  cat >"$runner" <<EOF
import sys, types
m = types.ModuleType('sacrebleu.version'); m.__version__ = 'source'; sys.modules['sacrebleu.version'] = m
sys.path.insert(0, '$SACREBLEU_SRC')
from sacrebleu.sacrebleu import main
sys.exit(main())
EOF
  for c in "-m bleu chrf" "-m bleu chrf --paired-bs" "-m bleu chrf ter --paired-bs"; do
    /usr/bin/time -f %e -o "$tfile" /usr/bin/python3 "$runner" "$ref" -i "$base" "$sys" $c -f text --no-color >/dev/null 2>&1
    printf 'sacreBLEU %-24s %s s\n' "$c" "$(cat "$tfile")"
  done
fi
