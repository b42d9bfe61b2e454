# Sourced by the long-context scripts: train_alibi_lm BUILD STEPS DIR trains the ALiBi byte LM
# (experiments/lm_sotu_char_small.yaml, model.position.type=alibi) for STEPS updates into
# DIR/alibi with 2 threads, after printing the CPU and the commit; it prints the training's
# last line, or its whole log and exits on failure.
train_alibi_lm() {
  local build=$1 steps=$2 dir=$3
  lscpu | sed -n 's/^Model name: */CPU: /p'
  echo "ropelab $(git describe --always --dirty 2>/dev/null || echo '?'), threads 2"
  "$build/ropelab" train experiments/lm_sotu_char_small.yaml -o "$dir/alibi" --set model.position.type=alibi \
    --set "train.steps=$steps" --set train.valid_every=0 --threads 2 > "$dir/train.log" 2>&1 ||
    { cat "$dir/train.log" >&2; exit 1; }
  tail -n 1 "$dir/train.log"
}
