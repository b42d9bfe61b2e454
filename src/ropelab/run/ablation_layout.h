#pragma once
/// An ablation directory (`ropelab ablate -o OUT`), every file name in one place:
///   OUT/runs/VARIANT.seedN/        a run directory (run/run.h), its log beside it (.log)
///   OUT/runs/VARIANT.seedN/ablation.done   the run trained and holds every evaluation asked
///   OUT/runs/VARIANT.seedN/finetune.source   the experiment's fine-tunes start from this run
///   OUT/results.csv, results.md, significance.csv   the tables
///   OUT/valid_curves.svg, extrapolation[.strideS].svg, positions.svg, passkey.svg, gain.svg,
///   retrieval.TASK.svg, heat_maps/   the plots

#include <cstdint>
#include <string>

namespace ropelab {

struct AblationLayout {
  explicit AblationLayout(std::string out_dir);
  std::string out;

  /// OUT/runs: every run of every experiment written into OUT.
  std::string runs() const;
  /// OUT/runs/<variant's directory name>.seedN; the unnamed variant is "base".
  std::string run(const std::string& variant, int64_t seed) const;
  /// A run directory of OUT/runs (one of `run`'s, or a finished run reused under another
  /// name) relative to OUT, as written: runs/NAME, results.csv's `run` column.
  static std::string run_in_out(const std::string& run_dir);
  /// A run's log, beside its directory.
  static std::string log(const std::string& run_dir);
  /// The marker of a run that trained to its end and holds every evaluation asked of it.
  static std::string done(const std::string& run_dir);
  /// Writes that marker (atomically: a run is marked whole or not at all).
  static void mark_done(const std::string& run_dir);
  /// The marker of a finished run that an experiment's fine-tunes start from (its
  /// checkpoint_best.pt): scripts/run_records.sh keeps that checkpoint in the run's archive.
  static std::string finetune_source(const std::string& run_dir);
  /// Writes that marker, unless the run has it.
  static void mark_finetune_source(const std::string& run_dir);

  std::string results_csv() const;
  std::string results_md() const;
  std::string significance_csv() const;
  std::string valid_curves_svg() const;
  /// extrapolation.svg (non-overlapping windows, `stride` 0) or extrapolation.strideS.svg.
  std::string extrapolation_svg(int64_t stride) const;
  std::string positions_svg() const;
  std::string passkey_svg() const;
  /// gain.svg: context gain by position bucket (gain.wW.svg for each window W but the first).
  std::string gain_svg(int64_t window, bool first) const;
  /// retrieval.TASK.svg: a retrieval probe's accuracy by length.
  std::string retrieval_svg(const std::string& task) const;
  /// heat_maps/MEASURE.<variant's directory name>.svg: a variant's accuracy by length and
  /// depth, pooled over seeds (MEASURE: passkey or a retrieval task).
  std::string heat_map_svg(const std::string& measure, const std::string& variant) const;
};

/// A directory name for a variant: key=value pairs with the characters a shell or a file
/// system would mind replaced by '_'; "base" for the unnamed variant.
std::string variant_dir_name(const std::string& variant);

}  // namespace ropelab
