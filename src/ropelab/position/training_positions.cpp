#include "ropelab/position/training_positions.h"

#include <algorithm>

#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {

const EnumNames<TrainPositionsType, 3> kTrainPositionsNames{{{TrainPositionsType::contiguous, "contiguous"},
                                                             {TrainPositionsType::randomized, "randomized"},
                                                             {TrainPositionsType::pose, "pose"}}};

/// An integer uniform in [low, high] from the default generator.
int64_t uniform(int64_t low, int64_t high) { return torch::randint(low, high + 1, {1}, torch::kLong).item<int64_t>(); }

}  // namespace

std::string to_string(TrainPositionsType type) { return enum_name(type, kTrainPositionsNames); }
TrainPositionsType parse_train_positions_type(const std::string& name) {
  return parse_enum(name, kTrainPositionsNames, "train_positions.type");
}

torch::Tensor pose_positions(int64_t length, int64_t first, int64_t skip) {
  TORCH_CHECK(first >= 0 && first <= length && skip >= 0, "pose_positions: a first chunk of ", first, " of ", length,
              " tokens and a skip of ", skip);
  auto positions = torch::arange(length, torch::kLong);
  positions.narrow(0, first, length - first).add_(skip);
  return positions;
}

Positions draw_training_positions(const TrainPositionsOptions& options, int64_t rows, int64_t length,
                                  const torch::Device& device) {
  const int64_t range = options.range();
  TORCH_CHECK(length <= range, "train_positions.range ", range, " is below a training sequence of ", length, " tokens");
  switch (options.type()) {
    case TrainPositionsType::contiguous:
      return Positions::range(0, length, 1, device);
    case TrainPositionsType::randomized:
      return std::get<0>(torch::randperm(range, torch::kLong).narrow(0, 0, length).sort()).to(device);
    case TrainPositionsType::pose: {
      auto out = torch::empty({rows, length}, torch::kLong);
      for (int64_t b = 0; b < rows; ++b)
        out[b].copy_(
            pose_positions(length, uniform(1, std::max<int64_t>((length + 1) / 2, 1)), uniform(0, range - length)));
      return out.to(device);
    }
  }
  TORCH_INTERNAL_ASSERT(false, "unknown train_positions.type");
}

}  // namespace ropelab
