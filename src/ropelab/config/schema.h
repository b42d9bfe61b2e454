#pragma once
/// The schema of a Config: every option once, as a visitor sees it. A visitor is called as
/// v(name, reference) for a value, v.choice(name, reference, parse) for an enum and
/// v.section(name, body) for a nested mapping; sections nest names with dots.
/// v.run_may_change(body) marks the keys described in `body` as ones that `--set` may change
/// on a trained run (`ropelab eval --run`, ...): they change no parameter, only how the
/// model is evaluated (RoPE scaling, kernels, windows, decoding, the tokens read). The YAML
/// reader and writer of config/config.cpp and the override check of
/// config/run_overrides.cpp are all visitors over this one description.

#include "ropelab/config/config.h"
#include "ropelab/task/task_registry.h"

namespace ropelab::schema {

template <typename V>
void describe(V& v, PositionOptions& p) {
  v.choice("type", p.type(), parse_position_type);
  v("max_len", p.max_len());
  v("learned_init_std", p.learned_init_std());
  v.choice("sinusoid_layout", p.sinusoid_layout(), parse_sinusoid_layout);
  v("base", p.base());
  v.choice("layout", p.layout(), parse_rotary_layout);
  v("fraction", p.fraction());
  v("unrotated", p.unrotated());
  v("nope_every", p.nope_every());
  v("forget_gate", p.forget_gate());
  v("forget_gate_bias", p.forget_gate_bias());
  v("cope", p.cope());
  v("cope_positions", p.cope_positions());
  v("ssmax", p.ssmax());
  v("ssmax_init", p.ssmax_init());
  v.run_may_change([&] { v.choice("rotary_impl", p.rotary_impl(), parse_rotary_impl); });
  v("rotate_cross_attention", p.rotate_cross_attention());
  v("axes", p.axes());
  v("num_buckets", p.num_buckets());
  v("max_distance", p.max_distance());
  v("t5_init_std", p.t5_init_std());
  v("scale_base", p.scale_base());
  v("fire_hidden", p.fire_hidden());
  v("fire_threshold", p.fire_threshold());
  v.choice("kerple_bound", p.kerple_bound(), parse_kerple_bound);
  v.run_may_change([&] {
    v.section("scaling", [&] {
      auto& s = p.scaling();
      v.choice("type", s.type(), parse_rope_scaling_type);
      v("factor", s.factor());
      v("original_max", s.original_max());
      v("beta_fast", s.beta_fast());
      v("beta_slow", s.beta_slow());
      v.choice("ramp", s.ramp(), parse_yarn_ramp);
      v.choice("dynamic", s.dynamic(), parse_dynamic_length);
    });
  });
  v.section("train_positions", [&] {
    auto& t = p.train_positions();
    v.choice("type", t.type(), parse_train_positions_type);
    v("range", t.range());
    v.run_may_change([&] { v("drawn_at_eval", t.drawn_at_eval()); });
  });
}

template <typename V>
void describe(V& v, AttentionOptions& a) {
  v.choice("type", a.type(), parse_attention_type);
  v("dropout", a.dropout());
  v("num_features", a.num_features());
  v("redraw_every", a.redraw_every());
  v("chunk_size", a.chunk_size());
  v.run_may_change([&] {  // how attention is computed and which keys it sees
    v.choice("kernel", a.kernel(), parse_attention_kernel);
    v("window", a.window());
    v("layer_windows", a.layer_windows());
    v("sinks", a.sinks());
    v.choice("window_positions", a.window_positions(), parse_window_positions);
  });
}

template <typename V>
void describe(V& v, DataOptions& d) {
  v("train", d.train());
  v("valid", d.valid());
  v("test", d.test());
  v.choice("format", d.format(), parse_corpus_format);
  v("source_lang", d.source_lang());
  v("target_lang", d.target_lang());
  v("max_len", d.max_len());
  v("bucketing", d.bucketing());
  v("context", d.context());
  v.run_may_change([&] {  // which tokens an evaluation reads
    v("eval_tokens", d.eval_tokens());
    v("documents", d.documents());
  });
  v.section("retrieval", [&] {
    auto& r = d.retrieval();
    v("tasks", r.tasks());
    v("ratio", r.ratio());
    v("min_length", r.min_length());
    v("max_length", r.max_length());
    v("corpus", r.corpus());
  });
  v.choice("source_layout", d.source_layout(), parse_source_layout);
  v("row_separator", d.row_separator());
}

template <typename V>
void describe(V& v, Config& c) {
  v.choice("task", c.task, parse_task);
  v.section("data", [&] { describe(v, c.data); });
  v.section("tokenizer", [&] {
    v.choice("type", c.tokenizer.type(), parse_tokenizer_type);
    v("vocab_size", c.tokenizer.vocab_size());
  });
  v.section("model", [&] {
    auto& m = c.model;
    v("d_model", m.d_model());
    v("heads", m.heads());
    v("d_ff", m.d_ff());
    v("encoder_layers", m.encoder_layers());
    v("decoder_layers", m.decoder_layers());
    v("dropout", m.dropout());
    v.choice("norm", m.norm(), parse_norm_position);
    v.section("encoder_position", [&] { describe(v, m.encoder_position()); });
    v.section("decoder_position", [&] { describe(v, m.decoder_position()); });
    v.section("attention", [&] { describe(v, m.attention()); });
  });
  v.section("train", [&] {
    auto& t = c.train;
    v("device", t.device());
    v("threads", t.threads());
    v("seed", t.seed());
    v.choice("precision", t.precision(), parse_precision);
    v("steps", t.steps());
    v("max_tokens", t.max_tokens());
    v("accumulate", t.accumulate());
    v.choice("lr_schedule", t.lr_schedule(), parse_lr_schedule);
    v("lr", t.lr());
    v("warmup", t.warmup());
    v("adam_beta1", t.adam_beta1());
    v("adam_beta2", t.adam_beta2());
    v("adam_eps", t.adam_eps());
    v("weight_decay", t.weight_decay());
    v("label_smoothing", t.label_smoothing());
    v("clip_norm", t.clip_norm());
    v("log_every", t.log_every());
    v("valid_every", t.valid_every());
    v("patience", t.patience());
    v("keep_checkpoints", t.keep_checkpoints());
    v("dist_timeout", t.dist_timeout());
    v("max_nonfinite", t.max_nonfinite());
    v("init_from", t.init_from());
  });
  v.run_may_change([&] {
    v.section("decode", [&] {
      auto& d = c.decode;
      v("beam", d.beam());
      v("lenpen", d.lenpen());
      v.choice("lenpen_formula", d.lenpen_formula(), parse_length_penalty);
      v("max_len_a", d.max_len_a());
      v("max_len_b", d.max_len_b());
    });
  });
}

}  // namespace ropelab::schema
