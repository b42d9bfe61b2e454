#include "ropelab/bench/attention_sweep.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

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

}  // namespace

std::string attention_case(AttentionType type, bool causal, int64_t length) {
  return to_string(type) + "," + (causal ? "1" : "0") + "," + std::to_string(length);
}

AttentionBenchOptions parse_attention_case(const std::string& text, AttentionBenchOptions o) {
  std::istringstream fields(text);
  std::string type;
  int causal = 0;
  char comma = 0;
  std::getline(fields, type, ',');
  if (!(fields >> causal >> comma >> o.length) || comma != ',')
    throw std::runtime_error("bench attention: --child expects TYPE,CAUSAL,T, got '" + text + "'");
  o.type = parse_attention_type(type);
  o.causal = causal != 0;
  return o;
}

void sweep_attention(const AttentionBenchOptions& o, const std::vector<int64_t>& lengths,
                     const std::vector<bool>& modes, const torch::Device& device, int64_t threads,
                     const std::string& executable, const std::function<void(const AttentionSweepRow&)>& on_row) {
  for (bool causal : modes)
    for (int64_t T : lengths) {
      AttentionSweepRow row;
      row.causal = causal, row.length = T;
      for (int b = 0; b < 2; ++b) {
        const auto type = b == 0 ? AttentionType::softmax : AttentionType::performer;
        // Softmax keeps about three (B, H, T, T) float tensors alive: skip what cannot fit.
        const double need =
            3.0 * 4.0 * static_cast<double>(o.batch * o.heads) * static_cast<double>(T) * static_cast<double>(T);
        if (type == AttentionType::softmax && device.is_cpu() && need > 0.6 * available_memory_bytes()) continue;
        std::ostringstream command;
        command << executable << " bench attention --child " << attention_case(type, causal, T) << " --batch "
                << o.batch << " --heads " << o.heads << " --head-dim " << o.head_dim << " --features " << o.features
                << " --repeats " << o.repeats << " --device " << device.str() << " --threads " << threads;
        FILE* pipe = popen(command.str().c_str(), "r");
        if (!pipe) throw std::runtime_error("bench attention: cannot start " + executable);
        double seconds = -1, peak = -1;
        const int read = std::fscanf(pipe, "%lf %lf", &seconds, &peak);
        const int status = pclose(pipe);
        if (read == 2 && status == 0) row.ms[b] = 1e3 * seconds, row.mib[b] = peak;
      }
      on_row(row);
    }
}

}  // namespace ropelab
