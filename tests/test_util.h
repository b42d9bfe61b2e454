#pragma once
// Shared helpers for ropelab's tests.

#include <c10/core/impl/FakeGuardImpl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <torch/torch.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ropelab/build_config.h"
#include "ropelab/model/transformer.h"

namespace ropelab::testing {

/// tests/golden/NAME parsed: values an independent reference wrote (its generator script
/// sits beside it). Read once per file.
inline const nlohmann::json& golden(const std::string& name) {
  static std::map<std::string, nlohmann::json> files;
  auto it = files.find(name);
  if (it == files.end()) {
    const std::string path = std::string(ROPELAB_SOURCE_DIR) + "/tests/golden/" + name;
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    it = files.emplace(name, nlohmann::json::parse(in)).first;
  }
  return it->second;
}

/// A whole file as a string ("" when it cannot be read).
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// While it lives, this process may write files of at most `bytes` (ulimit -f), and SIGXFSZ
/// is ignored, so that a write past the limit fails instead of ending the test. The limit and
/// the signal's handler are restored when it goes.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    if (::getrlimit(RLIMIT_FSIZE, &old_) != 0) throw std::runtime_error("getrlimit(RLIMIT_FSIZE) failed");
    rlimit small = old_;
    small.rlim_cur = bytes;
    handler_ = std::signal(SIGXFSZ, SIG_IGN);
    if (::setrlimit(RLIMIT_FSIZE, &small) != 0) {
      std::signal(SIGXFSZ, handler_);
      throw std::runtime_error("setrlimit(RLIMIT_FSIZE) failed");
    }
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
  void (*handler_)(int) = SIG_DFL;
};

/// Every test starts from the same RNG state.
class Seeded : public ::testing::Test {
 protected:
  void SetUp() override { torch::manual_seed(0); }
};

/// Seeded, plus a fresh temporary directory per test, removed afterwards.
class TempDir : public Seeded {
 protected:
  void SetUp() override {
    Seeded::SetUp();
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("ropelab_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  /// Writes `bytes` to DIR/name and returns the path.
  std::string write(const std::string& name, const std::string& bytes) {
    const auto path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::filesystem::path dir_;
};

/// A tiny Seq2Seq configuration (fast to build and run).
inline TransformerOptions tiny_options(int64_t vocab = 23) {
  return TransformerOptions()
      .vocab_size(vocab)
      .pad_id(0)
      .d_model(16)
      .heads(2)
      .d_ff(32)
      .encoder_layers(2)
      .decoder_layers(2)
      .dropout(0.0);
}

/// Every position encoder type, with options that fit tiny_options (Dh = 8).
inline std::vector<PositionOptions> all_position_types() {
  return {PositionOptions().type(PositionType::none),
          PositionOptions().type(PositionType::sinusoidal),
          PositionOptions().type(PositionType::learned).max_len(64),
          PositionOptions().type(PositionType::t5_bias).num_buckets(8).max_distance(16),
          PositionOptions().type(PositionType::rotary),
          PositionOptions().type(PositionType::rotary).layout(RotaryLayout::interleaved).fraction(0.5),
          PositionOptions().type(PositionType::rotary_nd).axes(2),
          PositionOptions().type(PositionType::alibi),
          PositionOptions().type(PositionType::kerple),
          PositionOptions().type(PositionType::fire).fire_hidden(4)};
}

/// Encoders for causal stacks only (xPos; the forget gate and CoPE, alone and with rotary)
/// and rotary under each RoPE scaling.
inline std::vector<PositionOptions> causal_position_types() {
  std::vector<PositionOptions> out{PositionOptions().type(PositionType::xpos),
                                   PositionOptions().type(PositionType::none).forget_gate(true),
                                   PositionOptions().type(PositionType::rotary).forget_gate(true),
                                   PositionOptions().type(PositionType::none).cope(true).cope_positions(5),
                                   PositionOptions().type(PositionType::rotary).cope(true).cope_positions(5)};
  for (auto scaling :
       {RopeScalingType::linear, RopeScalingType::ntk, RopeScalingType::dynamic_ntk, RopeScalingType::yarn})
    out.push_back(
        PositionOptions()
            .type(PositionType::rotary)
            .scaling(RopeScalingOptions().type(scaling).factor(2).original_max(4).dynamic(DynamicLength::token)));
  out.push_back(
      PositionOptions()
          .type(PositionType::rotary)
          .scaling(
              RopeScalingOptions().type(RopeScalingType::dynamic_ntk).original_max(4).dynamic(DynamicLength::call)));
  return out;
}

/// Runs `f` and returns the message of the exception it throws ("" if none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

/// For its lifetime, CUDA's device guard is c10's FakeGuardImpl: eight pretend GPUs whose
/// "current device" is a variable the test reads. Code that makes a GPU current
/// (c10::DeviceGuard, make_current) can then be checked on a machine without one, or
/// without a CUDA LibTorch. Restores whatever guard was registered before.
class FakeCudaGuard {
 public:
  using Impl = c10::impl::FakeGuardImpl<c10::DeviceType::CUDA>;
  FakeCudaGuard() : saved_(slot().exchange(&impl_)) { Impl::setDeviceIndex(0); }
  ~FakeCudaGuard() { slot().store(saved_); }
  FakeCudaGuard(const FakeCudaGuard&) = delete;
  FakeCudaGuard& operator=(const FakeCudaGuard&) = delete;
  /// The index of the current pretend GPU.
  static int64_t current() { return Impl::getDeviceIndex(); }

 private:
  static std::atomic<const c10::impl::DeviceGuardImplInterface*>& slot() {
    return c10::impl::device_guard_impl_registry[static_cast<size_t>(c10::DeviceType::CUDA)];
  }
  Impl impl_;
  const c10::impl::DeviceGuardImplInterface* saved_;
};

/// The devices a device-parameterised test runs on: the CPU, and CUDA where there is one.
inline std::vector<torch::Device> test_devices() { return {torch::kCPU, torch::Device(torch::kCUDA, 0)}; }

/// Skips the test (GTEST_SKIP in the caller) unless `device` exists here.
#define ROPELAB_SKIP_WITHOUT(device)                                                                           \
  if ((device).is_cuda() &&                                                                                    \
      (!torch::cuda::is_available() || (device).index() >= static_cast<int64_t>(torch::cuda::device_count()))) \
  GTEST_SKIP() << "no " << (device) << " here"

/// Rotary cos/sin tables (T, half) for positions offset..offset+T-1 (base 10000), computed in
/// double and returned in `dtype`.
inline std::pair<torch::Tensor, torch::Tensor> rotary_tables(int64_t T, int64_t half, int64_t offset = 0,
                                                             torch::Dtype dtype = torch::kDouble) {
  auto inv = torch::pow(10000.0, -torch::arange(half, torch::kDouble) / static_cast<double>(half));
  auto angles = torch::arange(offset, offset + T, torch::kDouble).unsqueeze(1) * inv;
  return {angles.cos().to(dtype), angles.sin().to(dtype)};
}

/// Max absolute difference.
/// `count` documents, one per line, of `sentences` short sentences of made-up names that
/// recur within each document (far keys hold something to copy): a corpus for data.documents.
inline std::string named_documents(int count, int sentences) {
  std::string text;
  for (int d = 0; d < count; ++d) {
    for (int s = 0; s < sentences; ++s)
      text += "zq" + std::to_string((d * 31 + s * 7) % 97) + " met yv" + std::to_string(d) + ". ";
    text += "\n";
  }
  return text;
}

inline double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

/// Incremental decoding of a Seq2Seq model and of a language model built from `options`
/// gives the logits of the full teacher-forced pass (LM: a 2-token prompt, then 1 at a time).
/// Each incremental decoding step against recomputing the whole prefix up to that step
/// (which is what a decoder without a cache does; dynamic NTK's angles depend on it).
inline void expect_cached_decoding_matches_full(const TransformerOptions& options, double tolerance,
                                                const torch::Device& device = torch::kCPU) {
  Seq2Seq model(options);
  model->to(device);
  model->eval();
  auto src = torch::tensor({{5, 6, 7, 8, 0}, {9, 10, 11, 12, 13}}).to(device);
  auto tgt = torch::randint(1, options.vocab_size(), {2, 6}).to(device);
  auto memory = model->encode(src);
  DecoderCache state;
  for (int64_t t = 0; t < 6; ++t)
    EXPECT_LT(max_diff(model->decode(tgt.narrow(1, t, 1), memory, &state),
                       model(src, tgt.narrow(1, 0, t + 1)).narrow(1, t, 1)),
              tolerance)
        << "seq2seq step " << t;
  LanguageModel lm(options);
  lm->to(device);
  lm->eval();
  DecoderCache lm_state;
  EXPECT_LT(max_diff(lm(tgt.narrow(1, 0, 2), &lm_state), lm(tgt.narrow(1, 0, 2))), tolerance);
  for (int64_t t = 2; t < 6; ++t)
    EXPECT_LT(max_diff(lm(tgt.narrow(1, t, 1), &lm_state), lm(tgt.narrow(1, 0, t + 1)).narrow(1, t, 1)), tolerance)
        << "lm step " << t;
  // the last positions' outputs alone (StackInputs::outputs) are the full pass's last rows,
  // in one call, and as a cached prompt whose last output alone is computed, then steps
  const auto full = lm(tgt), teacher_forced = model(src, tgt);
  for (int64_t n : {1, 4}) {
    const auto last = lm->forward(tgt, nullptr, {}, n), decoded = model->decode(tgt, memory, nullptr, {}, n);
    ASSERT_EQ(last.size(1), n);
    ASSERT_EQ(decoded.size(1), n);
    EXPECT_LT(max_diff(last, full.narrow(1, 6 - n, n)), tolerance) << "lm, the last " << n;
    EXPECT_LT(max_diff(decoded, teacher_forced.narrow(1, 6 - n, n)), tolerance) << "seq2seq, the last " << n;
  }
  // positions given (a dense bias for the last rows' positions; seq2seq's rotated
  // cross-attention queries, where enabled), shared and per row; padded keys
  const auto given = Positions::range(3, 6, lm->decoder->position()->axes(), device);
  EXPECT_LT(max_diff(lm->forward(tgt, nullptr, given, 2), lm->forward(tgt, nullptr, given).narrow(1, 4, 2)), tolerance)
      << "lm, the last 2 at given positions";
  const Positions per_row(torch::stack({given.values(), given.values() + 1}), given.axes());
  EXPECT_LT(max_diff(lm->forward(tgt, nullptr, per_row, 2), lm->forward(tgt, nullptr, per_row).narrow(1, 4, 2)),
            tolerance)
      << "lm, the last 2 at positions per row";
  auto padded = tgt.clone();
  padded[0].narrow(0, 0, 2).fill_(options.pad_id());
  EXPECT_LT(max_diff(lm->forward(padded, nullptr, {}, 2), lm->forward(padded).narrow(1, 4, 2)), tolerance)
      << "lm, the last 2 after padded keys";
  EXPECT_LT(max_diff(model->decode(tgt, memory, nullptr, given, 2),
                     model->decode(tgt, memory, nullptr, given).narrow(1, 4, 2)),
            tolerance)
      << "seq2seq, the last 2 at given positions";
  DecoderCache prompt;
  const auto first = lm->forward(tgt.narrow(1, 0, 4), &prompt, {}, 1);
  ASSERT_EQ(first.size(1), 1);
  EXPECT_LT(max_diff(first, full.narrow(1, 3, 1)), tolerance) << "lm prompt";
  for (int64_t t = 4; t < 6; ++t)
    EXPECT_LT(max_diff(lm(tgt.narrow(1, t, 1), &prompt), full.narrow(1, t, 1)), tolerance)
        << "lm step " << t << " after the prompt";
}

/// (loss(x + eps) - loss(x - eps)) / 2 eps at element `index` of the parameter `p`, which
/// is left as it was.
inline double central_difference(const torch::Tensor& p, int64_t index, const std::function<torch::Tensor()>& loss) {
  torch::NoGradGuard no_grad;
  auto flat = p.view(-1);
  const double eps = 1e-6, original = flat[index].item<double>();
  flat[index] = original + eps;
  const double plus = loss().item<double>();
  flat[index] = original - eps;
  const double minus = loss().item<double>();
  flat[index] = original;
  return (plus - minus) / (2 * eps);
}

}  // namespace ropelab::testing
