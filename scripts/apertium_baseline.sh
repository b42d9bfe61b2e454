#!/usr/bin/env bash
# Rule-based baseline for the English->Spanish Bible test split: translates
# data/corpora/bible/test.en with Debian's Apertium (apertium-eng-spa), writes one
# hypothesis per verse and scores them against test.es with `ropelab score`
# (BLEU and chrF, as `sacrebleu REF -i HYP -m bleu chrf`).
#   bash scripts/apertium_baseline.sh [HYP_FILE]     (default runs/apertium/hyp.test.txt)
# Environment: ROPELAB (default build/ropelab), CORPUS (default data/corpora/bible; when
# the default is missing, data/prepare.sh builds it).
# Installs the Debian packages apertium and apertium-eng-spa when they are missing.
set -euo pipefail
here=$PWD
cd "$(dirname "$0")/.."
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$here/$1" ;; esac; }
hyp=runs/apertium/hyp.test.txt
[ $# -eq 0 ] || hyp=$(abspath "$1")
ROPELAB=${ROPELAB:-build/ropelab}
if [ -n "${CORPUS:-}" ]; then
  corpus=$(abspath "$CORPUS")
else
  corpus=data/corpora/bible
  [ -f "$corpus/test.en" ] && [ -f "$corpus/test.es" ] || bash data/prepare.sh
fi
for f in "$corpus/test.en" "$corpus/test.es"; do
  [ -f "$f" ] || { echo "apertium_baseline.sh: error: $f not found" >&2; exit 1; }
done
[ -x "$ROPELAB" ] || { echo "apertium_baseline.sh: error: $ROPELAB not found (build first, or set ROPELAB)" >&2; exit 1; }

bash scripts/apt_install.sh apertium apertium-eng-spa

mkdir -p "$(dirname "$hyp")"
echo "# apertium -u eng-spa < $corpus/test.en > $hyp"
apertium -u eng-spa < "$corpus/test.en" > "$hyp"
echo "# $(wc -l < "$corpus/test.en") source lines, $(wc -l < "$hyp") hypothesis lines"
echo "# $ROPELAB score --ref $corpus/test.es --hyp $hyp"
"$ROPELAB" score --ref "$corpus/test.es" --hyp "$hyp"
