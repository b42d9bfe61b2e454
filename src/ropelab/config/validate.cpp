#include "ropelab/config/validate.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "ropelab/attention/backend.h"
#include "ropelab/config/config.h"
#include "ropelab/position/position_encoder.h"
#include "ropelab/position/position_traits.h"
#include "ropelab/task/task_registry.h"

namespace ropelab {
namespace {

template <typename T>
std::string show(const T& v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

/// require(ok, key, value, what) fails with "KEY=VALUE WHAT" unless ok.
class Check {
 public:
  explicit Check(const ConfigFail& fail) : fail_(fail) {}
  template <typename T>
  void operator()(bool ok, const std::string& key, const T& value, const std::string& what) const {
    if (!ok) fail(key, "=" + show(value) + " " + what);
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    fail_(key, what);
    throw std::logic_error("validate_config: the failure of " + key + " returned");
  }

 private:
  const ConfigFail& fail_;
};

void check_model(const TransformerOptions& m, const Check& require) {
  require(m.d_model() > 0, "model.d_model", m.d_model(), "must be positive");
  require(m.heads() > 0, "model.heads", m.heads(), "must be positive");
  require(m.d_model() % m.heads() == 0, "model.heads", m.heads(), "does not divide model.d_model=" + show(m.d_model()));
  require(m.d_ff() > 0, "model.d_ff", m.d_ff(), "must be positive");
  require(m.encoder_layers() > 0, "model.encoder_layers", m.encoder_layers(), "must be positive");
  require(m.decoder_layers() > 0, "model.decoder_layers", m.decoder_layers(), "must be positive");
  require(m.dropout() >= 0 && m.dropout() < 1, "model.dropout", m.dropout(), "must be in [0, 1)");
  require(m.attention().dropout() >= 0 && m.attention().dropout() < 1, "model.attention.dropout",
          m.attention().dropout(), "must be in [0, 1)");

  const auto& a = m.attention();
  require(a.num_features() > 0, "model.attention.num_features", a.num_features(), "must be positive");
  require(a.redraw_every() >= 0, "model.attention.redraw_every", a.redraw_every(), "must be >= 0 (0 = never)");
  require(a.chunk_size() > 0, "model.attention.chunk_size", a.chunk_size(), "must be positive");
  require(a.type() != AttentionType::performer || a.dropout() == 0, "model.attention.dropout", a.dropout(),
          "must be 0 with model.attention.type=performer (it forms no attention matrix to drop from)");
  require(a.window() >= 0, "model.attention.window", a.window(), "must be >= 0 (0 = every key)");
  require(a.sinks() >= 0, "model.attention.sinks", a.sinks(), "must be >= 0");
  require(a.window() == 0 || a.type() == AttentionType::softmax, "model.attention.window", a.window(),
          "needs model.attention.type=softmax, not " + to_string(a.type()));
}

/// Per-layer windows: one whole number per layer of every stack the task builds, in place
/// of model.attention.window, for softmax attention.
void check_layer_windows(const Config& c, const Check& require) {
  const auto& m = c.model;
  const auto& a = m.attention();
  const auto& text = a.layer_windows();
  if (text.empty()) {
    require(a.sinks() == 0 || a.window() > 0, "model.attention.sinks", a.sinks(),
            "needs a sliding window (model.attention.window > 0 or layer_windows)");
    return;
  }
  const std::string key = "model.attention.layer_windows";
  require(a.window() == 0, key, "'" + text + "'",
          "and model.attention.window=" + show(a.window()) + " cannot both be set (one window for every layer)");
  require(a.type() == AttentionType::softmax, key, "'" + text + "'",
          "needs model.attention.type=softmax, not " + to_string(a.type()));
  std::vector<std::pair<std::string, int64_t>> stacks{{"model.decoder_layers", m.decoder_layers()}};
  if (task_traits(c.task).encoder_decoder) stacks.emplace_back("model.encoder_layers", m.encoder_layers());
  for (const auto& [layers_key, layers] : stacks) try {
      layer_windows(a, layers);
    } catch (const c10::Error& e) {
      require.fail(key, ": " + e.msg() + " (" + layers_key + "=" + show(layers) + ")");
    }
  const auto windows = layer_windows(a, m.decoder_layers());
  require(a.sinks() == 0 || std::any_of(windows.begin(), windows.end(), [](int64_t w) { return w > 0; }),
          "model.attention.sinks", a.sinks(), "needs a sliding window in some layer (" + key + "='" + text + "')");
}

/// One stack's position encoder, built: its own checks (rotary dimensions, bucket ranges,
/// xPos in a causal stack) then run before any work, reported by key.
void check_stack(const TransformerOptions& m, const AttentionBackend& backend, const std::string& key,
                 const PositionOptions& p, bool causal, const Check& require) {
  const auto& s = p.scaling();
  const auto& traits = position_traits(p.type());
  require(s.type() == RopeScalingType::none || traits.scalable, key + ".scaling.type", to_string(s.type()),
          "applies to " + position_names(position_types([](const PositionTraits& t) { return t.scalable; })) +
              " only, not " + key + ".type=" + traits.name);
  require(s.factor() >= 1, key + ".scaling.factor", s.factor(), "must be >= 1 (the extension ratio)");
  require(p.t5_init_std() >= 0, key + ".t5_init_std", p.t5_init_std(), "must be >= 0 (0 = d_model^-0.5)");
  require(p.learned_init_std() >= 0, key + ".learned_init_std", p.learned_init_std(), "must be >= 0");
  require(std::isfinite(p.forget_gate_bias()), key + ".forget_gate_bias", p.forget_gate_bias(), "must be a number");
  for (const auto& [name, value] : {std::pair<const char*, double>{"max_len", p.max_len()},
                                    {"max_distance", p.max_distance()},
                                    {"scale_base", p.scale_base()},
                                    {"fire_threshold", p.fire_threshold()},
                                    {"cope_positions", p.cope_positions()},
                                    {"train_positions.range", p.train_positions().range()}})
    require(value > 0, key + "." + name, value, "must be positive (unset: from the training context)");
  require(p.nope_every() >= 0, key + ".nope_every", p.nope_every(), "must be >= 0 (0 = every layer rotates)");
  require(p.nope_every() == 0 || traits.kind == PositionKind::rotary, key + ".nope_every", p.nope_every(),
          "applies to " +
              position_names(position_types([](const PositionTraits& t) { return t.kind == PositionKind::rotary; })) +
              " only, not " + key + ".type=" + traits.name);
  require(!p.forget_gate() || causal, key + ".forget_gate", "true",
          "needs causal self-attention (a language model or a translator's decoder), not the encoder");
  require(!p.forget_gate() || backend->accepts_logit_bias(), key + ".forget_gate", "true",
          "needs an attention backend that takes a logit bias; model.attention.type=" +
              to_string(m.attention().type()) + " does not");
  require(!p.cope() || causal, key + ".cope", "true",
          "needs causal self-attention (a language model or a translator's decoder), not the encoder");
  require(!p.cope() || m.attention().type() == AttentionType::softmax, key + ".cope", "true",
          "needs model.attention.type=softmax, not " + to_string(m.attention().type()));
  require(!p.cope() || traits.kind != PositionKind::bias, key + ".cope", "true",
          "takes no other logit bias, not " + key + ".type=" + traits.name);
  require(!p.cope() || !p.forget_gate(), key + ".cope", "true", "and " + key + ".forget_gate cannot both be set");
  require(!p.ssmax() || causal, key + ".ssmax", "true",
          "needs causal self-attention (a language model or a translator's decoder), not the encoder");
  require(!p.ssmax() || m.attention().type() == AttentionType::softmax, key + ".ssmax", "true",
          "needs model.attention.type=softmax, not " + to_string(m.attention().type()));
  require(!p.ssmax() || !p.cope(), key + ".ssmax", "true",
          "and " + key + ".cope cannot both be set (CoPE's gates read the unscaled query)");
  require(!p.train_positions().drawn() || !traits.bounded || p.max_len() >= p.train_positions().range(),
          key + ".max_len", p.max_len(),
          "must be >= train_positions.range=" + show(p.train_positions().range()) +
              " (every position training may draw needs a row)");
  require(s.beta_fast() > s.beta_slow(), key + ".scaling.beta_fast", s.beta_fast(),
          "must exceed scaling.beta_slow=" + show(s.beta_slow()));
  require(s.original_max() > 0 || (s.type() != RopeScalingType::yarn && s.type() != RopeScalingType::dynamic_ntk),
          key + ".scaling.original_max", s.original_max(),
          "must be the training context for scaling.type=" + to_string(s.type()));
  require(traits.kind != PositionKind::rotary || traits.cross_attention || !p.rotate_cross_attention(),
          key + ".rotate_cross_attention", "true",
          "does not apply to " + std::string(traits.name) + " (defined for causal self-attention only)");
  const auto& windows = m.attention().layer_windows();
  require(windows.empty() || !p.ssmax(), key + ".ssmax", "true",
          "and model.attention.layer_windows cannot both be set (one count of keys per stack)");
  PositionEncoder encoder;
  try {
    encoder = make_position_encoder(p, PositionGeometry{m.d_model(), m.heads(), causal});
  } catch (const c10::Error& e) {
    require.fail(key, std::string(": ") + e.what_without_backtrace());
  }
  require(!encoder->has_logit_bias() || backend->accepts_logit_bias(), key + ".type", to_string(p.type()),
          "needs an attention backend that takes a logit bias; model.attention.type=" +
              to_string(m.attention().type()) + " does not");
  require(windows.empty() || !encoder->has_logit_bias(), key + ".type", to_string(p.type()),
          "and model.attention.layer_windows cannot both be set: a logit bias is made once per stack, for one "
          "window");
}

void check_train(const TrainOptions& t, const Check& require) {
  try {
    torch::Device device(t.device());
  } catch (const c10::Error&) {
    require(false, "train.device", t.device(), "is not a device (expected cpu, cuda or cuda:N)");
  }
  require(t.threads() >= 0, "train.threads", t.threads(), "must be >= 0 (0 = all cores)");
  require(t.precision() != Precision::fp16 || t.device().rfind("cuda", 0) == 0, "train.precision",
          to_string(t.precision()),
          "needs train.device cuda (LibTorch's CPU autocast runs bf16 only); use bf16 on the CPU");
  require(t.steps() > 0, "train.steps", t.steps(), "must be positive");
  require(t.max_tokens() > 0, "train.max_tokens", t.max_tokens(), "must be positive");
  require(t.accumulate() >= 1, "train.accumulate", t.accumulate(), "must be >= 1");
  require(t.lr() > 0, "train.lr", t.lr(), "must be positive");
  require(t.warmup() >= 0, "train.warmup", t.warmup(), "must be >= 0");
  require(t.lr_schedule() == LrSchedule::constant || t.warmup() > 0, "train.warmup", t.warmup(),
          "must be positive for lr_schedule " + to_string(t.lr_schedule()));
  require(t.adam_beta1() >= 0 && t.adam_beta1() < 1, "train.adam_beta1", t.adam_beta1(), "must be in [0, 1)");
  require(t.adam_beta2() >= 0 && t.adam_beta2() < 1, "train.adam_beta2", t.adam_beta2(), "must be in [0, 1)");
  require(t.adam_eps() > 0, "train.adam_eps", t.adam_eps(), "must be positive");
  require(t.weight_decay() >= 0, "train.weight_decay", t.weight_decay(), "must be >= 0");
  require(t.label_smoothing() >= 0 && t.label_smoothing() < 1, "train.label_smoothing", t.label_smoothing(),
          "must be in [0, 1)");
  require(t.clip_norm() >= 0, "train.clip_norm", t.clip_norm(), "must be >= 0 (0 = off)");
  require(t.log_every() > 0, "train.log_every", t.log_every(), "must be positive");
  require(t.valid_every() >= 0, "train.valid_every", t.valid_every(), "must be >= 0");
  require(t.patience() >= 0, "train.patience", t.patience(), "must be >= 0");
  require(t.keep_checkpoints() >= 0, "train.keep_checkpoints", t.keep_checkpoints(), "must be >= 0");
  require(t.dist_timeout() > 0, "train.dist_timeout", t.dist_timeout(), "must be positive (seconds)");
  require(t.max_nonfinite() >= 0, "train.max_nonfinite", t.max_nonfinite(), "must be >= 0");
}

/// The data each task reads, and the source layout.
void check_data(const Config& c, const Check& require) {
  const auto& m = c.model;
  require(c.tokenizer.vocab_size() >= 8, "tokenizer.vocab_size", c.tokenizer.vocab_size(), "must be >= 8");
  require(c.data.max_len() >= 3, "data.max_len", c.data.max_len(), "must be >= 3 (BOS, a token, EOS)");
  require(c.data.context() >= 1, "data.context", c.data.context(), "must be positive");
  require(c.data.eval_tokens() >= 0, "data.eval_tokens", c.data.eval_tokens(), "must be >= 0 (0 = the whole split)");
  if (const auto problem = task_traits(c.task).data_problem(c); !problem.key.empty())
    require.fail(problem.key, "=" + problem.value + " " + problem.what);
  const auto& enc = m.encoder_position();
  require(c.data.source_layout() != SourceLayout::grid || enc.type() != PositionType::rotary_nd || enc.axes() == 2,
          "model.encoder_position.axes", enc.axes(), "must be 2 for data.source_layout=grid (row, column)");
  require(c.data.source_layout() != SourceLayout::grid || !c.data.row_separator().empty(), "data.row_separator", "''",
          "must name the token that ends a row");
}

/// Drawn training positions cover the longest training sequence: data.context tokens for a
/// task that trains on windows, data.max_len for one that trains on whole examples.
void check_train_positions(const Config& c, const std::string& key, const PositionOptions& p, const Check& require) {
  const auto& t = p.train_positions();
  if (!t.drawn()) return;
  const std::string drawn = key + ".train_positions.type=" + to_string(t.type());
  require(!p.rotate_cross_attention(), key + ".rotate_cross_attention", "true",
          "and " + drawn + " cannot both be set: source and target positions would not share an origin in training");
  const bool windowed = task_traits(c.task).windowed;
  const int64_t longest = windowed ? c.data.context() : c.data.max_len();
  require(t.range() >= longest, key + ".train_positions.range", t.range(),
          "is below " + std::string(windowed ? "data.context=" : "data.max_len=") + std::to_string(longest) + ": " +
              to_string(t.type()) + " draws positions for a whole training sequence within [0, range)");
  require(!t.draws_at_eval() || !task_traits(c.task).encoder_decoder, key + ".train_positions.drawn_at_eval", "true",
          "applies to language models: a translator's search decodes through caches, at positions 0 ... T - 1");
}

void check_decode(const DecodeOptions& d, const Check& require) {
  require(d.beam() >= 1, "decode.beam", d.beam(), "must be >= 1");
  require(d.lenpen() >= 0, "decode.lenpen", d.lenpen(), "must be >= 0");
  require(d.max_len_a() >= 0, "decode.max_len_a", d.max_len_a(), "must be >= 0");
  require(d.max_len_b() >= 1 || d.max_len_a() > 0, "decode.max_len_b", d.max_len_b(),
          "must be >= 1 when decode.max_len_a is 0");
}

/// Settings that evaluation may take but training on drawn positions cannot (nor evaluation
/// with positions drawn too): the positions they use would not be the drawn ones.
void check_drawn_training(const Config& c, const std::string& key, const PositionOptions& p, const Check& require) {
  const auto& t = p.train_positions();
  if (!t.drawn()) return;
  const std::string drawn = key + ".train_positions.type=" + to_string(t.type());
  const auto& a = c.model.attention();
  require(!(p.scaling().type() == RopeScalingType::dynamic_ntk && p.scaling().dynamic() == DynamicLength::call),
          key + ".scaling.dynamic", "call",
          "follows the call's largest position, which " + drawn + " puts near the range in training; use token");
  require((a.window() == 0 && a.layer_windows().empty()) || a.window_positions() != WindowPositions::cache,
          "model.attention.window_positions", "cache",
          "places the queries of a window at cache positions (at most sinks + window - 1), not at the drawn "
          "positions of " +
              drawn + "; use sequence");
}

}  // namespace

void validate_training(const Config& c, const ConfigFail& fail) {
  const Check require(fail);
  if (task_traits(c.task).encoder_decoder)
    check_drawn_training(c, "model.encoder_position", c.model.encoder_position(), require);
  check_drawn_training(c, "model.decoder_position", c.model.decoder_position(), require);
}

void validate_config(const Config& c, const ConfigFail& fail) {
  const Check require(fail);
  const auto& m = c.model;
  check_model(m, require);
  check_layer_windows(c, require);
  // A language model has no encoder stack to check.
  auto backend = make_attention_backend(m.attention(), m.d_model() / m.heads());
  if (task_traits(c.task).encoder_decoder)
    check_stack(m, backend, "model.encoder_position", m.encoder_position(), false, require);
  check_stack(m, backend, "model.decoder_position", m.decoder_position(), true, require);
  if (task_traits(c.task).encoder_decoder)
    check_train_positions(c, "model.encoder_position", m.encoder_position(), require);
  check_train_positions(c, "model.decoder_position", m.decoder_position(), require);
  // positions drawn at evaluation too: every evaluation is held to what training is
  if (m.decoder_position().train_positions().draws_at_eval())
    check_drawn_training(c, "model.decoder_position", m.decoder_position(), require);
  check_train(c.train, require);
  check_data(c, require);
  check_decode(c.decode, require);
}

}  // namespace ropelab
