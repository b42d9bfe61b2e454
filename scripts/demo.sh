#!/usr/bin/env bash
# make demo: prepare the English-Spanish Bible corpus, train the toy translator
# (experiments/toy_en_es.yaml, ~6 minutes on 2 CPU cores), score the 622 test verses
# with BLEU and chrF, and show a few source / reference / translation triples. Run again,
# it continues the run in runs/toy_en_es (finished: nothing to train) and evaluates again.
set -euo pipefail
cd "$(dirname "$0")/.."
bash data/prepare.sh
run=runs/toy_en_es
build/ropelab train experiments/toy_en_es.yaml -o "$run"
echo
echo "== test split: build/ropelab eval --run $run --split test"
build/ropelab eval --run "$run" --split test
echo
echo "== a few test verses"
paste data/corpora/bible/test.en data/corpora/bible/test.es "$run/hyp.test.txt" | sed -n '2p;40p;101p;300p;555p' |
  awk -F'\t' '{ printf "  source:      %s\n  reference:   %s\n  translation: %s\n\n", $1, $2, $3 }'
