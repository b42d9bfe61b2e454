#!/usr/bin/env bash
# `ropelab score` (BLEU and chrF) on a 100,000-line corpus: two builds, alternating, ROUNDS
# rounds, wall time of each run; also each build pinned to one core (taskset -c 0).
#   bash bench/score_speed.sh OLD_ROPELAB NEW_ROPELAB [ROUNDS=3]
# The corpus: the Bible training split (data/prepare.sh), Spanish twice then English twice,
# first 100,000 lines as references; hypotheses drop every fifth word and replace every
# seventh by "el". The scores both builds print must agree.
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 rounds=${3:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
b=data/corpora/bible
[ -f $b/train.es ] || { echo "score_speed: $b/train.es missing; run data/prepare.sh" >&2; exit 1; }
cat $b/train.es $b/train.es $b/train.en $b/train.en | awk 'NR <= 100000' >"$dir/ref"
awk '{n=split($0,w," "); s=""; for(i=1;i<=n;i++){ if(i%5==0) continue; x=w[i]; if(i%7==0) x="el"; s=s (s?" ":"") x}; print s}' \
  "$dir/ref" >"$dir/hyp"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores; $(wc -l <"$dir/ref") lines, $(wc -w <"$dir/ref") reference words"
"$old" score --ref "$dir/ref" --hyp "$dir/hyp" >"$dir/old.out"
"$new" score --ref "$dir/ref" --hyp "$dir/hyp" >"$dir/new.out"
# the new build may print more metrics after the old ones; those it shares must agree
head -n "$(wc -l <"$dir/old.out")" "$dir/new.out" | cmp -s - "$dir/old.out" ||
  { echo "the builds disagree:"; diff "$dir/old.out" "$dir/new.out"; exit 1; }
cat "$dir/new.out"
wall() { /usr/bin/time -f %e "$@" score --ref "$dir/ref" --hyp "$dir/hyp" 2>&1 >/dev/null | tail -1; }
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then o=$(wall "$old"); n=$(wall "$new"); else n=$(wall "$new"); o=$(wall "$old"); fi
  o1=$(wall taskset -c 0 "$old"); n1=$(wall taskset -c 0 "$new")
  printf 'round %d: old %s s, new %s s (%.1fx) | one core: old %s s, new %s s (%.1fx)\n' \
    "$r" "$o" "$n" "$(echo "$o / $n" | bc -l)" "$o1" "$n1" "$(echo "$o1 / $n1" | bc -l)"
done
