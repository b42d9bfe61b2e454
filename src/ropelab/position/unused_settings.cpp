#include "ropelab/position/unused_settings.h"

namespace ropelab {

PositionOptions with_unused_settings_cleared(const PositionOptions& options) {
  const PositionOptions none;
  PositionOptions out = options;
  const auto type = options.type();
  // Each setting below is read by the one encoder named (position_encoder.cpp,
  // bias_encoders.cpp, rope_scaling.cpp, model/attention.cpp) and by no other.
  if (type != PositionType::learned) out.learned_init_std(none.learned_init_std());
  if (type != PositionType::sinusoidal) out.sinusoid_layout(none.sinusoid_layout());
  if (type != PositionType::t5_bias) {
    out.num_buckets(none.num_buckets());
    out.max_distance(none.max_distance());
    out.t5_init_std(none.t5_init_std());
  }
  if (type != PositionType::xpos) out.scale_base(none.scale_base());
  if (type != PositionType::fire) {
    out.fire_hidden(none.fire_hidden());
    out.fire_threshold(none.fire_threshold());
  }
  if (type != PositionType::kerple && type != PositionType::kerple_power) out.kerple_bound(none.kerple_bound());
  if (!options.cope()) out.cope_positions(none.cope_positions());
  const auto scaling = options.scaling().type();
  if (scaling != RopeScalingType::yarn) {
    out.scaling().beta_fast(none.scaling().beta_fast());
    out.scaling().beta_slow(none.scaling().beta_slow());
    out.scaling().ramp(none.scaling().ramp());
  }
  if (scaling != RopeScalingType::dynamic_ntk) out.scaling().dynamic(none.scaling().dynamic());
  return out;
}

}  // namespace ropelab
