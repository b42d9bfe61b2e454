# Sourced by the scripts that time two builds of ropelab on the same command
# (compare_passkey.sh, compare_sliding_eval.sh): `alternate ROUNDS OLD NEW` runs the
# caller's `timed BUILD NAME` (NAME is old or new; it prints wall seconds) for both builds,
# the old first in odd rounds and the new first in even ones, then the caller's
# `report ROUND OLD_SECONDS NEW_SECONDS`.
alternate() {
  local rounds=$1 old=$2 new=$3 r a b
  for r in $(seq "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then
      a=$(timed "$old" old)
      b=$(timed "$new" new)
    else
      b=$(timed "$new" new)
      a=$(timed "$old" old)
    fi
    report "$r" "$a" "$b"
  done
}
# The wall seconds of the command "$@" (its output goes where the caller sends it).
wall_seconds() {
  local start end
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}
