#!/usr/bin/env bash
# Feeds ropelab one bad input at a time (configs, data, run files, flags, signals) and
# prints a Markdown table: the input, the exit status, how many lines went to stderr and
# the first of them (or the log line that reports what was skipped). The tests in
# tests/apps/cli_*_test.cpp and tests/data/text_test.cpp assert these behaviours; this
# script shows them all in one place.
#   bash scripts/bad_inputs.sh [BUILD_DIR]
set -uo pipefail
build=$(cd "${1:-build}" && pwd)
ropelab="$build/ropelab"
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# the demo config, with its data paths made absolute: everything below runs in $work
demo="$work/demo_tiny.yaml"
pairs="$root/data/demo/pairs.tsv"
sed "s#data/demo/#$root/data/demo/#" "$root/experiments/demo_tiny.yaml" >"$demo"
tiny=(--set train.steps=2 --set train.valid_every=0 --set train.log_every=1)

echo "| input | exit | stderr lines | what ropelab said |"
echo "|---|---|---|---|"

# row NAME GREP COMMAND...: runs COMMAND, reports the exit status, the number of stderr
# lines and the first stderr line (or, with GREP, the first output line matching it).
row() {
  local name=$1 pattern=$2
  shift 2
  "$@" >out.txt 2>err.txt
  local code=$? said
  if [[ -n $pattern ]]; then
    said=$(grep -h -m1 -E -- "$pattern" out.txt err.txt | head -n1)
  else
    said=$(head -n1 err.txt)
  fi
  said=${said//$work\//}
  said=${said//$root\//}
  printf '| %s | %s | %s | `%s` |\n' "$name" "$code" "$(wc -l <err.txt)" "${said//|/\\|}"
}

# --- configs ---------------------------------------------------------------------------
printf 'model:\n  d_modle: 64\n' >typo.yaml
row "unknown key (typo)" "" "$ropelab" train "$demo" -c typo.yaml --dump-config
printf 'model:\n  heads: four\n' >type.yaml
row "wrong type" "" "$ropelab" train "$demo" -c type.yaml --dump-config
row "dropout 1.5" "" "$ropelab" train "$demo" --set model.dropout=1.5 --dump-config
row "heads not dividing d_model" "" "$ropelab" train "$demo" --set model.heads=5 --dump-config
row "odd rotary dimension" "" "$ropelab" train "$demo" --set model.d_model=60 --set model.position.type=rotary --dump-config
row "Performer with T5 bias" "" "$ropelab" train "$demo" --set model.attention.type=performer --set model.position.type=t5_bias --dump-config
printf 'model:\n  d_model: [64\n' >syntax.yaml
row "YAML syntax error" "" "$ropelab" train "$demo" -c syntax.yaml --dump-config
row "unknown --set key" "" "$ropelab" train "$demo" --set train.stepz=3 --dump-config
row "missing config file" "" "$ropelab" train nowhere.yaml
row "unknown flag" "" "$ropelab" train "$demo" --bogus
row "negative --threads" "" "$ropelab" train "$demo" --threads -1
printf 'base: %s\ngrid:\n  model.position.type: [rotray]\n' "$demo" >exp.yaml
row "ablate: bad grid value" "" "$ropelab" ablate exp.yaml -o ablate_out

# --- data ------------------------------------------------------------------------------
printf 'a b\nc d\n' >two.en
printf 'x y\n' >two.es
row "parallel files of different lengths" "" "$ropelab" train "$demo" --set data.format=parallel \
  --set data.train=two --set data.source_lang=en --set data.target_lang=es --set data.valid= -o r1 "${tiny[@]}"
{ head -n3 "$pairs"; printf 'bad \xff\xfe byte\tmalo\n'; } >utf8.tsv
row "invalid UTF-8" "" "$ropelab" train "$demo" --set data.train=utf8.tsv --set data.valid= -o r2 "${tiny[@]}"
{ printf '\xef\xbb\xbf'; sed 's/$/\r/' "$pairs"; } >crlf.tsv
row "BOM and CRLF line ends" "skipped|done:" "$ropelab" train "$demo" --set data.train=crlf.tsv --set data.valid= -o r3 "${tiny[@]}"
{ cat "$pairs"; printf '\n\t\nhello\t\n'; } >empty.tsv
row "empty lines and empty sides" "skipped" "$ropelab" train "$demo" --set data.train=empty.tsv --set data.valid= -o r4 "${tiny[@]}"
{ cat "$pairs"; printf 'this pair is far too long for data.max_len eight\testa es demasiado larga para el limite\n'; } >long.tsv
row "over-long pair" "skipped" "$ropelab" train "$demo" --set data.train=long.tsv --set data.valid= --set data.max_len=8 -o r5 "${tiny[@]}"
{ head -n3 "$pairs"; printf 'no tab on this line\n'; } >notab.tsv
row "TSV line without a tab" "" "$ropelab" train "$demo" --set data.train=notab.tsv --set data.valid= -o r6 "${tiny[@]}"
row "missing data file" "" "$ropelab" train "$demo" --set data.train=missing.tsv -o r7 "${tiny[@]}"

# --- run files and checkpoints -----------------------------------------------------------
"$ropelab" train "$demo" -o good "${tiny[@]}" >/dev/null 2>&1
cp -r good trunc && head -c 2000 good/checkpoint_last.pt >trunc/checkpoint_last.pt
row "truncated checkpoint" "" "$ropelab" eval --run trunc --checkpoint last
cp -r good foreign && head -c 50000 /dev/urandom >foreign/checkpoint_last.pt
row "foreign file as checkpoint" "" "$ropelab" eval --run foreign --checkpoint last
row "missing checkpoint" "" "$ropelab" eval --run good --checkpoint nowhere.pt
"$ropelab" train "$demo" -o other "${tiny[@]}" --set model.d_model=32 --set model.d_ff=64 >/dev/null 2>&1
row "checkpoint of another model shape" "" "$ropelab" eval --run good --checkpoint other/checkpoint_last.pt
cp -r good novocab && rm novocab/vocab.txt
row "missing vocabulary" "" "$ropelab" eval --run novocab
row "resume of a different config" "" "$ropelab" train "$demo" -o good --resume "${tiny[@]}" --set model.d_model=32
spm=(--set tokenizer.type=sentencepiece --set tokenizer.vocab_size=60)
if "$ropelab" train "$demo" -o spm "${tiny[@]}" "${spm[@]}" >/dev/null 2>&1; then
  cp -r spm nospm && rm nospm/spm.model
  row "missing SentencePiece model" "" "$ropelab" eval --run nospm
  cp -r spm badspm && printf 'not a model' >badspm/spm.model
  row "corrupt SentencePiece model" "" "$ropelab" eval --run badspm
fi
row "checkpoint larger than the space left (ulimit -f)" "" bash -c "trap '' XFSZ; ulimit -f 64; exec \"$ropelab\" train \"$demo\" -o full --set train.steps=2 --set train.valid_every=0"

# --- run directories ---------------------------------------------------------------------
row "train -o over a trained run of another config" "" "$ropelab" train "$demo" -o good "${tiny[@]}" --set train.steps=3
row "--resume where there is no run" "" "$ropelab" train --resume -o nowhere
mkdir half && cp good/config.yaml half/  # what a run killed during tokenization leaves
row "--resume of a run killed before its first checkpoint" "no checkpoint yet" "$ropelab" train --resume -o half
"$ropelab" train "$demo" -o busy --set train.steps=100000 --set train.valid_every=0 >busy.out 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q '^step' busy.out 2>/dev/null && break; sleep 0.2; done
row "a second writer while a run trains" "" "$ropelab" train "$demo" -o busy "${tiny[@]}"
kill -TERM "$pid"
wait "$pid"

# --- training ----------------------------------------------------------------------------
row "non-finite loss (lr 1e30), 3 skips allowed" "diverged" "$ropelab" train "$demo" -o nan "${tiny[@]}" \
  --set train.steps=50 --set train.lr=1e30 --set train.clip_norm=0 --set train.max_nonfinite=3
"$ropelab" train "$demo" -o sig --set train.steps=100000 --set train.valid_every=0 >sig.out 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q '^step' sig.out 2>/dev/null && break; sleep 0.2; done
kill -TERM "$pid"
wait "$pid"
code=$?
printf '| SIGTERM during training | %s | - | `%s` |\n' "$code" "$(grep -m1 stopping sig.out)"

# --- scoring -----------------------------------------------------------------------------
printf 'a\nb\n' >ref.txt
printf 'a\n' >hyp.txt
row "score: hypothesis and reference of different lengths" "" "$ropelab" score --ref ref.txt --hyp hyp.txt
