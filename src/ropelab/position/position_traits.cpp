#include "ropelab/position/position_traits.h"

#include <c10/util/Exception.h>

#include <cstdio>

#include "ropelab/position/position_encoder.h"

namespace ropelab {

const std::vector<PositionTraits>& position_registry() {
  using K = PositionKind;
  using T = PositionType;
  // clang-format off
  static const std::vector<PositionTraits> registry = {
      //                name            kind         rel    query  train  causal cross  scale  bound  axes   length keys                reference
      {T::none,         "none",         K::none,     false, false, false, false, false, false, false, false, {},                        "Kazemnejad et al. 2023"},
      {T::sinusoidal,   "sinusoidal",   K::additive, false, false, false, false, false, false, false, false, {},                        "Vaswani et al. 2017"},
      {T::learned,      "learned",      K::additive, false, false, true,  false, false, false, true,  false, {"max_len"},               "Gehring et al. 2017"},
      {T::t5_bias,      "t5_bias",      K::bias,     true,  false, true,  false, false, false, false, false, {"max_distance"},          "Raffel et al. 2020"},
      {T::rotary,       "rotary",       K::rotary,   true,  false, false, false, true,  true,  false, false, {"scaling.original_max"},  "Su et al. 2021"},
      {T::rotary_nd,    "rotary_nd",    K::rotary,   true,  false, false, false, true,  true,  false, true,  {"scaling.original_max"},  "Su et al. 2021"},
      {T::alibi,        "alibi",        K::bias,     true,  false, false, false, false, false, false, false, {},                        "Press et al. 2022"},
      {T::xpos,         "xpos",         K::rotary,   true,  false, false, true,  false, false, false, false, {"scale_base"},            "Sun et al. 2022"},
      {T::kerple,       "kerple",       K::bias,     true,  false, true,  false, false, false, false, false, {},                        "Chi et al. 2022"},
      {T::kerple_power, "kerple_power", K::bias,     true,  false, true,  false, false, false, false, false, {},                        "Chi et al. 2022"},
      {T::fire,         "fire",         K::bias,     false, true,  true,  false, false, false, false, false, {"fire_threshold"},        "Li et al. 2024"},
  };
  // clang-format on
  return registry;
}

const PositionTraits& position_traits(PositionType type) {
  for (const auto& row : position_registry())
    if (row.type == type) return row;
  TORCH_INTERNAL_ASSERT(false, "a PositionType without a row in the position registry");
}

std::vector<PositionType> position_types(bool (*keep)(const PositionTraits&)) {
  std::vector<PositionType> out;
  for (const auto& row : position_registry())
    if (keep(row)) out.push_back(row.type);
  return out;
}

std::string position_names(const std::vector<PositionType>& types) {
  std::string out;
  for (size_t i = 0; i < types.size(); ++i)
    out += (i == 0 ? "" : i + 1 == types.size() ? " and " : ", ") + std::string(position_traits(types[i]).name);
  return out;
}

std::string position_label(const PositionOptions& o) {
  std::string label = position_traits(o.type()).name;
  if (o.type() == PositionType::none && (o.forget_gate() || o.cope())) label = o.cope() ? "cope" : "fox";
  char number[32];
  if (o.unrotated() > 0) {
    std::snprintf(number, sizeof number, "%g", o.unrotated());
    label += std::string(" unrotated ") + number;
  }
  if (o.nope_every() > 0) label += " nope/" + std::to_string(o.nope_every());
  if (o.forget_gate() && o.type() != PositionType::none) label += "+fox";
  if (o.forget_gate() && o.forget_gate_bias() != 0) {
    std::snprintf(number, sizeof number, "%g", o.forget_gate_bias());
    label += std::string(" bias ") + number;
  }
  if (o.cope() && o.type() != PositionType::none) label += "+cope";
  if (o.ssmax()) label += "+ssmax";
  if (o.scaling().type() != RopeScalingType::none) label += "+" + to_string(o.scaling().type());
  if (o.train_positions().drawn() && o.type() != PositionType::none)
    label += "+" + to_string(o.train_positions().type());
  return label;
}

PositionKind position_kind(const PositionOptions& options) {
  const auto kind = position_traits(options.type()).kind;
  return options.forget_gate() && kind == PositionKind::none ? PositionKind::bias : kind;
}

}  // namespace ropelab
