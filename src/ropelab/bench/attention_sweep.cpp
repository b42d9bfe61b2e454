#include "ropelab/bench/attention_sweep.h"

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "ropelab/attention/softmax.h"
#include "ropelab/ops/attention/sdpa_attention.h"

namespace ropelab {

namespace {

/// MemAvailable from /proc/meminfo in bytes (0 if unknown).
double available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  double kb = 0;
  while (meminfo >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024.0;
  return 0;
}

/// `word` as one word of a POSIX shell command line: in single quotes, each quote inside
/// written as '\''.
std::string shell_word(const std::string& word) {
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

AttentionVariant parse_attention_variant(const std::string& name) {
  try {
    return {name, parse_attention_type(name), AttentionKernel::automatic};
  } catch (const std::exception&) {
  }
  try {
    return {name, AttentionType::softmax, parse_attention_kernel(name)};
  } catch (const std::exception&) {
    throw std::runtime_error("bench attention: unknown variant '" + name + "' (a backend: " + attention_type_choices() +
                             "; or a softmax kernel: " + attention_kernel_choices() + ")");
  }
}

bool variant_materializes(const AttentionVariant& variant, const AttentionBenchOptions& o, int64_t length,
                          const torch::Device& device) {
  if (variant.type != AttentionType::softmax) return false;
  SoftmaxCall call;  // float32 operands every kernel takes, on `device`
  call.on_cpu = call.streaming_fits = call.materialized_fits = device.is_cpu();
  call.sdpa_fits = o.bias == BenchBias::none && o.window == 0 && sdpa_compiled();  // PyTorch's kernel keeps O(T)
  call.scores = o.batch * o.heads * length * length;
  const auto path = softmax_path(variant.kernel, call);
  return path == SoftmaxPath::materialized || path == SoftmaxPath::aten;
}

std::string sweep_bias_error(const AttentionVariant (&variants)[2], BenchBias bias) {
  if (bias == BenchBias::none) return {};
  for (const auto& variant : variants)
    if (variant.type != AttentionType::softmax)
      return to_string(bias) + " needs two softmax kernels; the " + to_string(variant.type) +
             " backend takes no logit bias (e.g. --compare streaming,materialized)";
  return {};
}

std::string attention_case(const AttentionVariant& variant, bool causal, int64_t length) {
  return variant.name + "," + (causal ? "1" : "0") + "," + std::to_string(length);
}

AttentionBenchOptions parse_attention_case(const std::string& text, AttentionBenchOptions o) {
  std::istringstream fields(text);
  std::string name;
  int causal = 0;
  char comma = 0;
  std::getline(fields, name, ',');
  if (!(fields >> causal >> comma >> o.length) || comma != ',')
    throw std::runtime_error("bench attention: --child expects VARIANT,CAUSAL,T, got '" + text + "'");
  const auto variant = parse_attention_variant(name);
  o.type = variant.type, o.kernel = variant.kernel;
  o.causal = causal != 0;
  return o;
}

void sweep_attention(const AttentionBenchOptions& o, const AttentionVariant (&variants)[2],
                     const std::vector<int64_t>& lengths, const std::vector<bool>& modes, const torch::Device& device,
                     int64_t threads, const std::string& executable,
                     const std::function<void(const AttentionSweepRow&)>& on_row) {
  for (bool causal : modes)
    for (int64_t T : lengths) {
      AttentionSweepRow row;
      row.causal = causal, row.length = T;
      for (int b = 0; b < 2; ++b) {
        const auto& variant = variants[b];
        // (B, H, T, T) float tensors alive at once: about three for the materialized softmax
        // forward and backward (one forward alone), none for the streaming kernel or the
        // chunked form (FIRE per tile included) or the Performer, one more for FIRE's dense bias where the kernel
        // materializes. Skip what cannot fit.
        const double square = static_cast<double>(c10::elementSize(o.dtype)) * static_cast<double>(o.batch * o.heads) *
                              static_cast<double>(T * T);
        const bool materializes = variant_materializes(variant, o, T, device);
        const double need = square * ((materializes ? (o.backward ? 3.0 : 1.0) : 0.0) +
                                      (o.bias == BenchBias::fire && materializes ? (o.backward ? 2.0 : 1.0) : 0.0));
        if (device.is_cpu() && need > 0.6 * available_memory_bytes()) continue;
        std::vector<std::string> argv = {executable,
                                         "bench",
                                         "attention",
                                         "--child",
                                         attention_case(variant, causal, T),
                                         "--batch",
                                         std::to_string(o.batch),
                                         "--heads",
                                         std::to_string(o.heads),
                                         "--head-dim",
                                         std::to_string(o.head_dim),
                                         "--features",
                                         std::to_string(o.features),
                                         "--bias",
                                         to_string(o.bias),
                                         "--repeats",
                                         std::to_string(o.repeats),
                                         "--dtype",
                                         bench_dtype_name(o.dtype),
                                         "--window",
                                         std::to_string(o.window),
                                         "--sinks",
                                         std::to_string(o.sinks),
                                         "--tiles",
                                         std::to_string(o.tiles.queries) + "x" + std::to_string(o.tiles.keys),
                                         "--device",
                                         device.str(),
                                         "--threads",
                                         std::to_string(threads)};
        if (!o.backward) argv.push_back("--forward-only");
        std::ostringstream command;
        for (const auto& a : argv) command << shell_word(a) << ' ';
        FILE* pipe = popen(command.str().c_str(), "r");
        if (!pipe) throw std::runtime_error("bench attention: cannot start " + executable);
        double seconds = -1, peak = -1;
        const int read = std::fscanf(pipe, "%lf %lf", &seconds, &peak);
        const int status = pclose(pipe);
        if (read == 2 && status == 0)
          row.ms[b] = 1e3 * seconds, row.mib[b] = peak;
        else  // the child's own error, if any, went to stderr before this line
          std::fprintf(stderr, "bench attention: case %s failed (%s); '-' in its row\n",
                       attention_case(variant, causal, T).c_str(),
                       status == -1               ? "cannot wait for it"
                       : WIFSIGNALED(status)      ? ("signal " + std::to_string(WTERMSIG(status))).c_str()
                       : WEXITSTATUS(status) != 0 ? ("exit status " + std::to_string(WEXITSTATUS(status))).c_str()
                                                  : "no measurement printed");
      }
      on_row(row);
    }
}

}  // namespace ropelab
