#include "ropelab/attention/backend.h"

#include <algorithm>
#include <sstream>

#include "ropelab/attention/performer.h"
#include "ropelab/attention/softmax.h"
#include "ropelab/ops/attention/chunked_attention.h"
#include "ropelab/util/enum_names.h"

namespace ropelab {

torch::Tensor causal_mask(int64_t tq, int64_t tk, const torch::Device& device) {
  return torch::ones({tq, tk}, torch::TensorOptions().dtype(torch::kBool).device(device)).triu(tk - tq + 1);
}

torch::Tensor visibility_mask(int64_t tq, int64_t tk, bool causal, int64_t window, int64_t sinks,
                              const torch::Device& device) {
  if (window <= 0) return causal && tq > 1 ? causal_mask(tq, tk, device) : torch::Tensor();
  return hidden_keys(KeyVisibility{causal, window, sinks}, tq, tk, 0, tq, 0, tk, device);
}

LogitBias LogitBias::relative_table(torch::Tensor table) {
  LogitBias bias;
  bias.relative = std::move(table);
  return bias;
}

LogitBias LogitBias::factored(FireTileBias fire) {
  LogitBias bias;
  bias.fire = std::move(fire);
  return bias;
}

void KeyValueCache::reorder(const torch::Tensor& index) {
  k = k.index_select(0, index);
  v = v.index_select(0, index);
  if (forget.defined()) forget = forget.index_select(0, index);
}

namespace {
/// The backend's own KeyValueCache in `cache`, made on first use.
KeyValueCache& key_values(AttentionCachePtr& cache) {
  if (!cache) cache = std::make_unique<KeyValueCache>();
  auto* kv = dynamic_cast<KeyValueCache*>(cache.get());
  TORCH_INTERNAL_ASSERT(kv, "attention cache of another backend");
  return *kv;
}
}  // namespace

torch::Tensor AttentionBackendImpl::forward_cached(AttentionInputs in, AttentionCachePtr& cache) {
  auto& kv = key_values(cache);
  auto& forget = in.logit_bias.forget;  // the new tokens' sums continue from the last cached one
  if (kv.k.defined()) {
    in.k = torch::cat({kv.k, in.k}, -2);
    in.v = torch::cat({kv.v, in.v}, -2);
    if (forget.defined())
      forget = torch::cat({kv.forget, forget + kv.forget.narrow(-1, kv.forget.size(-1) - 1, 1)}, -1);
  }
  kv.k = in.k, kv.v = in.v, kv.forget = forget;
  if (in.rotate_keys) {  // kept unrotated: every key at this step's length
    TORCH_CHECK(in.window == 0, "AttentionBackend: keys rotated at each step need a cache of every key (no window)");
    in.k = in.rotate_keys(in.k);
  }
  auto out = forward(in);
  if (auto keep = windowed_cache_keep(kv.k.size(-2), in.window, in.sinks, kv.k.device()); keep.defined()) {
    kv.k = kv.k.index_select(-2, keep), kv.v = kv.v.index_select(-2, keep);
    if (kv.forget.defined()) kv.forget = kv.forget.index_select(-1, keep);
  }
  return out;
}

namespace {
/// layer_windows' numbers, as many as written.
std::vector<int64_t> listed_windows(const std::string& text) {
  TORCH_CHECK(text.empty() || text.back() != ',', "'", text, "' ends with a comma: give one window per layer");
  std::vector<int64_t> out;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto first = item.find_first_not_of(' '), last = item.find_last_not_of(' ');
    const auto digits = first == std::string::npos ? std::string() : item.substr(first, last - first + 1);
    TORCH_CHECK(!digits.empty() && digits.size() <= 18 && digits.find_first_not_of("0123456789") == std::string::npos,
                "'", item, "' in '", text, "' is not a window (a whole number >= 0)");
    out.push_back(std::stoll(digits));
  }
  return out;
}
}  // namespace

std::vector<int64_t> layer_windows(const AttentionOptions& options, int64_t layers) {
  if (options.layer_windows().empty()) return std::vector<int64_t>(static_cast<size_t>(layers), options.window());
  auto windows = listed_windows(options.layer_windows());
  TORCH_CHECK(static_cast<int64_t>(windows.size()) == layers, "'", options.layer_windows(), "' has ", windows.size(),
              " windows for ", layers, " layers: give one window per layer");
  return windows;
}

int64_t widest_window(const AttentionOptions& options) {
  if (options.layer_windows().empty()) return options.window();
  const auto windows = listed_windows(options.layer_windows());
  const bool full = std::find(windows.begin(), windows.end(), 0) != windows.end();
  return full || windows.empty() ? 0 : *std::max_element(windows.begin(), windows.end());
}

AttentionOptions layer_attention(const AttentionOptions& options, int64_t index, int64_t layers) {
  auto layer = options;
  layer.window(layer_windows(options, layers)[static_cast<size_t>(index)]).layer_windows("");
  return layer;
}

int64_t last_cache_position(const AttentionOptions& options) {
  if (options.window() <= 0 || options.window_positions() != WindowPositions::cache) return 0;
  return options.sinks() + options.window() - 1;
}

torch::Tensor windowed_cache_keep(int64_t length, int64_t window, int64_t sinks, const torch::Device& device) {
  if (window <= 0 || length <= sinks + window - 1) return {};
  auto options = torch::TensorOptions().dtype(torch::kLong).device(device);
  return torch::cat({torch::arange(sinks, options), torch::arange(length - (window - 1), length, options)});
}

torch::Tensor AttentionBackendImpl::forward_memory(AttentionInputs in, AttentionCachePtr& cache,
                                                   const MemoryKeyValues& memory) {
  auto& kv = key_values(cache);
  if (!kv.k.defined()) std::tie(kv.k, kv.v) = memory();  // once per sentence
  in.k = kv.k, in.v = kv.v;
  return forward(in);
}

torch::Tensor attend_in_fp32(AttentionInputs in, const std::function<torch::Tensor(const AttentionInputs&)>& attend) {
  const auto reduced = [](const torch::Tensor& t) {
    return t.defined() && (t.scalar_type() == torch::kBFloat16 || t.scalar_type() == torch::kHalf);
  };
  if (!reduced(in.q) && !reduced(in.k) && !reduced(in.v)) return attend(in);
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  for (auto* t : {&in.q, &in.k, &in.v, &in.sink_queries})
    if (reduced(*t)) *t = t->to(torch::kFloat);
  return attend(in);
}

void attention_before_update(torch::nn::Module& model, int64_t done) {
  for (auto& module : model.modules())
    if (auto* backend = dynamic_cast<AttentionBackendImpl*>(module.get())) backend->before_update(done);
}

AttentionBackend make_attention_backend(const AttentionOptions& options, int64_t head_dim) {
  switch (options.type()) {
    case AttentionType::softmax:
      return std::make_shared<SoftmaxAttention>(options);
    case AttentionType::performer:
      return std::make_shared<PerformerAttention>(options, head_dim);
  }
  TORCH_INTERNAL_ASSERT(false, "unhandled AttentionType");
}

namespace {
const EnumNames<AttentionType, 2> kAttentionNames{
    {{AttentionType::softmax, "softmax"}, {AttentionType::performer, "performer"}}};

const EnumNames<AttentionKernel, 4> kKernelNames{{{AttentionKernel::automatic, "auto"},
                                                  {AttentionKernel::streaming, "streaming"},
                                                  {AttentionKernel::chunked, "chunked"},
                                                  {AttentionKernel::materialized, "materialized"}}};

const EnumNames<WindowPositions, 2> kWindowPositionNames{
    {{WindowPositions::cache, "cache"}, {WindowPositions::sequence, "sequence"}}};
}  // namespace

std::string to_string(WindowPositions positions) { return enum_name(positions, kWindowPositionNames); }
WindowPositions parse_window_positions(const std::string& name) {
  return parse_enum(name, kWindowPositionNames, "window positions");
}
std::string to_string(AttentionType type) { return enum_name(type, kAttentionNames); }
std::string attention_type_choices() { return enum_choices(kAttentionNames); }
std::string attention_kernel_choices() { return enum_choices(kKernelNames); }
std::string to_string(AttentionKernel kernel) { return enum_name(kernel, kKernelNames); }
AttentionKernel parse_attention_kernel(const std::string& name) {
  return parse_enum(name, kKernelNames, "attention kernel");
}
AttentionType parse_attention_type(const std::string& name) {
  return parse_enum(name, kAttentionNames, "attention type");
}

}  // namespace ropelab
