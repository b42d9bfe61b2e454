#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS from its seeds (fuzz/seeds/NAME) and its growing
# corpus (BUILD/fuzz-corpus/NAME). A finding leaves crash-* files in BUILD/fuzz-findings
# and makes this script fail.
#   bash fuzz/run.sh BUILD_DIR SECONDS
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?build dir}
seconds=${2:-60}
findings="$build/fuzz-findings"
mkdir -p "$findings"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
status=0
for name in config corpus bleu; do
  corpus="$build/fuzz-corpus/$name"
  mkdir -p "$corpus"
  echo "fuzz: $name for ${seconds}s"
  if ! "$build/ropelab_fuzz_$name" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -max_len=4096 \
      -print_final_stats=1 -artifact_prefix="$findings/$name-" "$corpus" "fuzz/seeds/$name" \
      > "$build/fuzz-$name.log" 2>&1; then
    echo "fuzz: $name FOUND A PROBLEM (log $build/fuzz-$name.log, inputs $findings/$name-*)"
    tail -40 "$build/fuzz-$name.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|cov: " "$build/fuzz-$name.log" | tail -2
  fi
done
exit $status
