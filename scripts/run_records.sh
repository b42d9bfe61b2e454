#!/usr/bin/env bash
# The finished runs of an ablation directory as one small archive each, to commit or carry
# between machines (a study longer than one machine's life goes on from them).
#
#   scripts/run_records.sh pack OUT [RECORDS]     every finished run of OUT/runs not yet in
#                                                 RECORDS -> RECORDS/NAME.tar.xz
#   scripts/run_records.sh pack-trained OUT [RECORDS]
#                                                 every run of OUT/runs that trained to its end
#                                                 but lacks evaluations (RUN/trained, no
#                                                 ablation.done) -> RECORDS/NAME.trained.tar.xz,
#                                                 with its checkpoint_best.pt and the
#                                                 evaluations it holds so far (packed again
#                                                 when the run gained files since)
#   scripts/run_records.sh unpack OUT [RECORDS]   every RECORDS/*.tar.xz -> OUT/runs/NAME
#
# A trained record splits a study between machines or sessions: one trains, a later one unpacks
# the run and `ropelab ablate` runs only its missing evaluations (a run that trained is not
# trained again). Packing the finished run later removes its trained record, and unpacking
# prefers a finished record to a trained one.
#
# RECORDS defaults to OUT/records. A run is finished when ablate marked it (ablation.done:
# trained, and every evaluation asked of it written). An archive holds the run's folder and
# its log, relative to OUT, without the cached data (RUN/data), the lock and the checkpoints:
# a finished run is reported from its evaluations, and `ablate` does not train it again.
# A run that an experiment's fine-tunes start from (RUN/finetune.source, which ablate writes
# as the run finishes) keeps its checkpoint_best.pt, so that the fine-tunes can still run
# from the records; one that lacks the checkpoint is packed with a warning naming both files.
# RUN_RECORDS_KEEP_BEST, a shell pattern over run folder names, keeps the checkpoint of the
# runs it matches as well, marked or not.
# Unpacking is refused while an ablate runs on OUT (it holds OUT/.lock), leaves alone a run
# that OUT/runs holds finished, refuses one whose lock a live process holds (stop ablate
# first), and replaces an unfinished one, moved aside to RUN.old-YYYYMMDD-HHMMSS (nothing
# trained is deleted).
set -uo pipefail

die() {
  echo "run_records: $*" >&2
  exit 1
}

[ $# -ge 2 ] && [ $# -le 3 ] || die "usage: scripts/run_records.sh pack|pack-trained|unpack OUT [RECORDS]"
action=$1 out=${2%/}
records=${3:-$out/records}
keep_best=${RUN_RECORDS_KEEP_BEST:-}

# The files of run NAME that its archive holds, relative to OUT.
members() {
  local name=$1
  (cd "$out" && find "runs/$name" -path "runs/$name/data" -prune -o -type f ! -name '*.pt' ! -name .lock -print)
  [ -f "$out/runs/$name.log" ] && echo "runs/$name.log"
  if [ ! -f "$out/runs/$name/checkpoint_best.pt" ]; then
    [ -f "$out/runs/$name/finetune.source" ] &&
      echo "run_records: warning: $out/runs/$name/finetune.source: fine-tunes start from this run, and it has no checkpoint_best.pt to keep" >&2
    return 0
  fi
  # shellcheck disable=SC2053  # RUN_RECORDS_KEEP_BEST is a pattern
  if [ -f "$out/runs/$name/finetune.source" ] || { [ -n "$keep_best" ] && [[ $name == $keep_best ]]; }; then
    echo "runs/$name/checkpoint_best.pt"
  fi
  return 0
}

# Whether a file that run NAME's archive would hold is newer than ARCHIVE.
changed_since() {
  local name=$1 archive=$2 member
  while IFS= read -r member; do
    [ "$out/$member" -nt "$archive" ] && return 0
  done < <(members "$name" 2>/dev/null)
  return 1
}

case $action in
  pack | pack-trained)
    [ -d "$out/runs" ] || die "$out/runs: no such folder (OUT is an ablate output directory)"
    mkdir -p "$records" || die "$records: cannot create the folder"
    packed=0 present=0
    for run in "$out"/runs/*/; do
      name=$(basename "$run")
      if [ "$action" = pack ]; then
        [ -f "$out/runs/$name/ablation.done" ] || continue
        archive=$records/$name.tar.xz
      else
        if [ ! -f "$out/runs/$name/trained" ] || [ -f "$out/runs/$name/ablation.done" ]; then continue; fi
        [ -f "$out/runs/$name/checkpoint_best.pt" ] ||
          die "$out/runs/$name/checkpoint_best.pt: a trained run's record needs its checkpoint for the evaluations"
        archive=$records/$name.trained.tar.xz
        [ -f "$records/$name.tar.xz" ] && continue  # its finished record is there
      fi
      # a trained record is packed again when its run gained files since (evaluations run so
      # far, which the next machine then does not run again); a finished record is final
      if [ -f "$archive" ] && { [ "$action" = pack ] || ! changed_since "$name" "$archive"; }; then
        present=$((present + 1))
        continue
      fi
      # the archive is dated from before its files were listed, so that a report written
      # while tar runs counts as newer (changed_since) and is packed the next time
      listed=$(date +%s.%N)
      list=$(mktemp)
      members "$name" >"$list"
      if [ "$action" = pack-trained ] && ! grep -qx "runs/$name/checkpoint_best.pt" "$list"; then
        echo "runs/$name/checkpoint_best.pt" >>"$list"
      fi
      # a temporary name of its own: two packs at once never write the same file
      partial=$(mktemp "$records/.$name.XXXXXX") || { rm -f "$list"; die "$records: cannot create a file"; }
      if ! tar -C "$out" -cJf "$partial" -T "$list"; then
        rm -f "$partial" "$list"
        die "$archive: tar failed"
      fi
      rm -f "$list"
      touch -d "@$listed" "$partial" && chmod 644 "$partial" && mv "$partial" "$archive" ||
        die "$archive: cannot move the archive into place"
      packed=$((packed + 1))
      echo "run_records: $archive ($(du -h "$archive" | cut -f1))"
      if [ "$action" = pack ] && [ -f "$records/$name.trained.tar.xz" ]; then
        rm -f "$records/$name.trained.tar.xz" && echo "run_records: $records/$name.trained.tar.xz: superseded, removed"
      fi
    done
    echo "run_records: $packed runs packed into $records, $present there already"
    ;;
  unpack)
    [ -d "$records" ] || die "$records: no such folder"
    mkdir -p "$out/runs" || die "$out/runs: cannot create the folder"
    # OUT/.lock, which `ropelab ablate` holds while it runs (it plans once, and would train
    # or evaluate a run that this replaces), held here until the unpack ends.
    exec 9>>"$out/.lock" || die "$out/.lock: cannot open"
    flock -n 9 || die "$out: an ablate is running on it (stop it, then unpack again)"
    : >"$out/.lock" && echo "$$ scripts/run_records.sh unpack $out" >&9  # named to a refused ablate
    added=0 kept=0
    for archive in "$records"/*.tar.xz; do
      [ -f "$archive" ] || continue
      name=$(basename "$archive" .tar.xz)
      marker=ablation.done
      if [[ $name == *.trained ]]; then  # a trained record: the finished one, if any, wins
        name=${name%.trained} marker=trained
        [ -f "$records/$name.tar.xz" ] && continue
      fi
      run=$out/runs/$name
      if [ -f "$run/ablation.done" ] || { [ $marker = trained ] && [ -f "$run/trained" ]; }; then
        kept=$((kept + 1))
        continue
      fi
      if [ -f "$run/.lock" ] && ! flock -n "$run/.lock" true; then
        die "$run: a running process holds it (stop ablate, then unpack again)"
      fi
      listing=$(tar -tJf "$archive") || die "$archive: not a readable archive"
      # Names compared literally (the quoted parts of a case pattern match as written).
      finished=0
      while IFS= read -r member; do
        case $member in
          "runs/$name/$marker") finished=1 ;;
          */../* | */..) die "$archive: holds a path that leaves its run ($member)" ;;
          "runs/$name" | "runs/$name/" | "runs/$name/"* | "runs/$name.log") ;;
          *) die "$archive: holds files outside runs/$name ($member)" ;;
        esac
      done <<<"$listing"
      [ $finished = 1 ] || die "$archive: holds no $( [ $marker = trained ] && echo trained || echo finished) run (no runs/$name/$marker)"
      # An unfinished run is set aside, not deleted, as `ropelab train` does (RUN.old-TIME).
      if [ -e "$run" ]; then
        old=$run.old-$(date +%Y%m%d-%H%M%S)
        mv "$run" "$old" || die "$run: cannot move it aside"
        [ -f "$run.log" ] && mv "$run.log" "$old.log"
        echo "run_records: $run was unfinished: moved to $old"
      fi
      # Unpacked beside runs/ first and moved into place whole: a tar that stops part-way (a
      # full disk, a kill) leaves no run folder holding ablation.done without its reports.
      stage=$(mktemp -d "$out/.unpack.XXXXXX") || die "$out: cannot create a folder to unpack into"
      if ! tar -C "$stage" -xJf "$archive"; then
        rm -rf "$stage"
        die "$archive: cannot unpack (nothing of it put in $out/runs)"
      fi
      if [ -e "$run.log" ]; then
        mv "$run.log" "$run.log.old-$(date +%Y%m%d-%H%M%S)" || die "$run.log: cannot move it aside"
      fi
      if ! mv "$stage/runs/$name" "$run" || { [ -f "$stage/runs/$name.log" ] && ! mv "$stage/runs/$name.log" "$run.log"; }; then
        rm -rf "$stage"
        die "$run: cannot move the unpacked run into place"
      fi
      rm -rf "$stage"
      added=$((added + 1))
    done
    echo "run_records: $added runs unpacked into $out/runs, $kept there finished already"
    ;;
  *) die "unknown action '$action' (pack, pack-trained or unpack)" ;;
esac
