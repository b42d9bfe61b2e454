#!/usr/bin/env bash
# A retrieval-ratio probe: rotary trained as the retrieval grid's rotary run
# (experiments/effective_context_retrieval.yaml, seed 1) with a share RATIO of its tokens from
# multi-key and MQAR documents, then asked multi-key needles and MQAR at 1x and 2x with the
# grid's documents (--retrieval-seed 1001). The run folder goes to OUT (default
# runs/retrieval_probe_RATIO), its log to OUT.log.
#   bash experiments/results/effective_context/retrieval/probes/probes.sh 0.5
set -euo pipefail
cd "$(dirname "$0")/../../../../.."
r=${1:?usage: probes.sh RATIO [OUT]}
out=${2:-runs/retrieval_probe_$r}
mkdir -p "$(dirname "$out")"
build/ropelab train --allow-unread experiments/lm_sotu_char_small.yaml experiments/lm_sotu_char_512.yaml \
  --set data.documents=true --set "data.retrieval={tasks: 'multikey,mqar', ratio: $r, min_length: 288, max_length: 504}" \
  --set 'model.position={type: rotary}' --set train.seed=1 --threads 1 -o "$out" > "$out.log" 2>&1
build/ropelab retrieval eval --task multikey --lengths 504,1016 --documents 20 --retrieval-seed 1001 --depths 0,0.5,1 \
  --corpus data/corpora/sotu/test.txt --run "$out" --threads 1 >> "$out.log" 2>&1
build/ropelab retrieval eval --task mqar --lengths 504,1016 --documents 20 --retrieval-seed 1001 --run "$out" \
  --threads 1 >> "$out.log" 2>&1
