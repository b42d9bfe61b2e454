#include "ropelab/run/ablation_layout.h"

#include <cctype>
#include <filesystem>
#include <utility>

#include "ropelab/util/files.h"

namespace ropelab {

namespace fs = std::filesystem;

namespace {

std::string join(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).string(); }

}  // namespace

AblationLayout::AblationLayout(std::string out_dir) : out(std::move(out_dir)) {}

std::string AblationLayout::runs() const { return join(out, "runs"); }

std::string AblationLayout::run(const std::string& variant, int64_t seed) const {
  return join(runs(), variant_dir_name(variant) + ".seed" + std::to_string(seed));
}

std::string AblationLayout::run_in_out(const std::string& run_dir) {
  const auto path = fs::path(run_dir).lexically_normal();  // "out/runs/NAME/" names NAME too
  return join("runs", (path.has_filename() ? path : path.parent_path()).filename().string());
}

std::string AblationLayout::log(const std::string& run_dir) { return run_dir + ".log"; }
std::string AblationLayout::done(const std::string& run_dir) { return join(run_dir, "ablation.done"); }
void AblationLayout::mark_done(const std::string& run_dir) {
  write_file_atomically(done(run_dir), "", "ablation marker");
}
std::string AblationLayout::finetune_source(const std::string& run_dir) { return join(run_dir, "finetune.source"); }
void AblationLayout::mark_finetune_source(const std::string& run_dir) {
  if (!fs::exists(finetune_source(run_dir)))
    write_file_atomically(finetune_source(run_dir), "checkpoint_best.pt starts fine-tunes\n", "fine-tune marker");
}
std::string AblationLayout::results_csv() const { return join(out, "results.csv"); }
std::string AblationLayout::results_md() const { return join(out, "results.md"); }
std::string AblationLayout::significance_csv() const { return join(out, "significance.csv"); }
std::string AblationLayout::valid_curves_svg() const { return join(out, "valid_curves.svg"); }
std::string AblationLayout::extrapolation_svg(int64_t stride) const {
  return join(
      out, stride == 0 ? std::string("extrapolation.svg") : "extrapolation.stride" + std::to_string(stride) + ".svg");
}
std::string AblationLayout::positions_svg() const { return join(out, "positions.svg"); }
std::string AblationLayout::passkey_svg() const { return join(out, "passkey.svg"); }
std::string AblationLayout::gain_svg(int64_t window, bool first) const {
  return join(out, first ? std::string("gain.svg") : "gain.w" + std::to_string(window) + ".svg");
}
std::string AblationLayout::retrieval_svg(const std::string& task) const {
  return join(out, "retrieval." + task + ".svg");
}
std::string AblationLayout::heat_map_svg(const std::string& measure, const std::string& variant) const {
  return join(join(out, "heat_maps"), measure + "." + variant_dir_name(variant) + ".svg");
}

std::string variant_dir_name(const std::string& variant) {
  std::string out;
  for (char c : variant)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '=' || c == '-' || c == '_' || c == ',')
               ? c
               : '_';
  return out.empty() ? "base" : out;
}

}  // namespace ropelab
