#include "ropelab/position/unused_settings.h"

#include "ropelab/position/position_traits.h"

namespace ropelab {

namespace {

using T = PositionType;

bool rotary_kind(T t) { return position_traits(t).kind == PositionKind::rotary; }
bool rotary_or_sinusoidal(T t) { return rotary_kind(t) || t == T::sinusoidal; }
bool unrotatable(T t) { return rotary_kind(t) && t != T::xpos; }  // p-RoPE: not xPos
bool crossing(T t) { return position_traits(t).cross_attention; }
bool multi_axis(T t) { return position_traits(t).multi_axis; }
bool bounded(T t) { return position_traits(t).bounded; }
bool scalable(T t) { return position_traits(t).scalable; }
bool sinusoidal(T t) { return t == T::sinusoidal; }
bool t5(T t) { return t == T::t5_bias; }
bool xpos(T t) { return t == T::xpos; }
bool fire(T t) { return t == T::fire; }
bool kerple(T t) { return t == T::kerple || t == T::kerple_power; }
// one position per token to draw; not xPos, whose scales grow as zeta^(n / scale_base) over
// the whole range (64 C: past float's range once the range exceeds about 70 C)
bool positioned(T t) { return t != T::none && !multi_axis(t) && t != T::xpos; }

/// "a and b": the encoders for which `reads` holds.
template <bool (*reads)(T)>
std::string names() {
  std::vector<T> types;
  for (const auto& row : position_registry())
    if (reads(row.type)) types.push_back(row.type);
  return position_names(types);
}

template <bool (*reads)(T)>
bool by_type(const PositionOptions& o) {
  return reads(o.type());
}

bool scaled(const PositionOptions& o) { return scalable(o.type()) && o.scaling().type() != RopeScalingType::none; }
bool yarn(const PositionOptions& o) { return scalable(o.type()) && o.scaling().type() == RopeScalingType::yarn; }
bool dynamic(const PositionOptions& o) {
  return scalable(o.type()) && o.scaling().type() == RopeScalingType::dynamic_ntk;
}
bool yarn_or_dynamic(const PositionOptions& o) { return yarn(o) || dynamic(o); }
bool drawn(const PositionOptions& o) { return positioned(o.type()) && o.train_positions().drawn(); }
bool randomized(const PositionOptions& o) {
  return positioned(o.type()) && o.train_positions().type() == TrainPositionsType::randomized;
}

/// A reset of one setting to its default: FIELD is its accessor ("max_len", "scaling().ramp").
#define ROPELAB_RESET(FIELD) [](PositionOptions& o, const PositionOptions& d) { o.FIELD() = d.FIELD(); }

}  // namespace

const std::vector<PositionSetting>& position_settings() {
  static const std::vector<PositionSetting> settings = {
      {"max_len", by_type<bounded>, names<bounded>, ROPELAB_RESET(max_len)},
      {"learned_init_std", by_type<bounded>, names<bounded>, ROPELAB_RESET(learned_init_std)},
      {"sinusoid_layout", by_type<sinusoidal>, names<sinusoidal>, ROPELAB_RESET(sinusoid_layout)},
      {"base", by_type<rotary_or_sinusoidal>, names<rotary_or_sinusoidal>, ROPELAB_RESET(base)},
      {"layout", by_type<rotary_kind>, names<rotary_kind>, ROPELAB_RESET(layout)},
      {"fraction", by_type<rotary_kind>, names<rotary_kind>, ROPELAB_RESET(fraction)},
      {"unrotated", by_type<unrotatable>, names<unrotatable>, ROPELAB_RESET(unrotated)},
      {"nope_every", by_type<rotary_kind>, names<rotary_kind>, ROPELAB_RESET(nope_every)},
      {"forget_gate_bias", [](const PositionOptions& o) { return o.forget_gate(); },
       [] { return std::string("forget_gate: true"); }, ROPELAB_RESET(forget_gate_bias)},
      {"cope_positions", [](const PositionOptions& o) { return o.cope(); }, [] { return std::string("cope: true"); },
       ROPELAB_RESET(cope_positions)},
      {"ssmax_init", [](const PositionOptions& o) { return o.ssmax(); }, [] { return std::string("ssmax: true"); },
       ROPELAB_RESET(ssmax_init)},
      {"rotary_impl", by_type<rotary_kind>, names<rotary_kind>, ROPELAB_RESET(rotary_impl)},
      {"rotate_cross_attention", by_type<crossing>, names<crossing>, ROPELAB_RESET(rotate_cross_attention)},
      {"axes", by_type<multi_axis>, names<multi_axis>, ROPELAB_RESET(axes)},
      {"num_buckets", by_type<t5>, names<t5>, ROPELAB_RESET(num_buckets)},
      {"max_distance", by_type<t5>, names<t5>, ROPELAB_RESET(max_distance)},
      {"t5_init_std", by_type<t5>, names<t5>, ROPELAB_RESET(t5_init_std)},
      {"scale_base", by_type<xpos>, names<xpos>, ROPELAB_RESET(scale_base)},
      {"fire_hidden", by_type<fire>, names<fire>, ROPELAB_RESET(fire_hidden)},
      {"fire_threshold", by_type<fire>, names<fire>, ROPELAB_RESET(fire_threshold)},
      {"kerple_bound", by_type<kerple>, names<kerple>, ROPELAB_RESET(kerple_bound)},
      {"scaling.factor", scaled, [] { return names<scalable>() + " with a scaling.type"; },
       ROPELAB_RESET(scaling().factor)},
      {"scaling.original_max", yarn_or_dynamic, [] { return std::string("scaling.type: yarn or dynamic_ntk"); },
       ROPELAB_RESET(scaling().original_max)},
      {"scaling.beta_fast", yarn, [] { return std::string("scaling.type: yarn"); }, ROPELAB_RESET(scaling().beta_fast)},
      {"scaling.beta_slow", yarn, [] { return std::string("scaling.type: yarn"); }, ROPELAB_RESET(scaling().beta_slow)},
      {"scaling.ramp", yarn, [] { return std::string("scaling.type: yarn"); }, ROPELAB_RESET(scaling().ramp)},
      {"scaling.dynamic", dynamic, [] { return std::string("scaling.type: dynamic_ntk"); },
       ROPELAB_RESET(scaling().dynamic)},
      {"train_positions.type", by_type<positioned>, names<positioned>, ROPELAB_RESET(train_positions().type)},
      {"train_positions.range", drawn, [] { return std::string("train_positions.type: randomized or pose"); },
       ROPELAB_RESET(train_positions().range)},
      {"train_positions.drawn_at_eval", randomized, [] { return std::string("train_positions.type: randomized"); },
       ROPELAB_RESET(train_positions().drawn_at_eval)},
  };
  return settings;
}

PositionOptions with_unused_settings_cleared(const PositionOptions& options) {
  const PositionOptions none;
  PositionOptions out = options;
  for (const auto& setting : position_settings())
    if (!setting.read_by(options)) setting.reset(out, none);
  return out;
}

#undef ROPELAB_RESET

}  // namespace ropelab
