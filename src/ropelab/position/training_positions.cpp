#include "ropelab/position/training_positions.h"

#include <algorithm>

#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {

const EnumNames<TrainPositionsType, 3> kTrainPositionsNames{{{TrainPositionsType::contiguous, "contiguous"},
                                                             {TrainPositionsType::randomized, "randomized"},
                                                             {TrainPositionsType::pose, "pose"}}};

/// PoSE's map for each row: (rows, length) positions 0 ... length - 1, raised by skip[r] from
/// index first[r] on; first and skip (rows) int64.
torch::Tensor pose_rows(int64_t length, const torch::Tensor& first, const torch::Tensor& skip) {
  const auto index = torch::arange(length, torch::kLong).unsqueeze(0);  // (1, T)
  return index + skip.unsqueeze(1) * index.ge(first.unsqueeze(1));
}

}  // namespace

std::string to_string(TrainPositionsType type) { return enum_name(type, kTrainPositionsNames); }
TrainPositionsType parse_train_positions_type(const std::string& name) {
  return parse_enum(name, kTrainPositionsNames, "train_positions.type");
}

torch::Tensor pose_positions(int64_t length, int64_t first, int64_t skip) {
  TORCH_CHECK(first >= 0 && first <= length && skip >= 0, "pose_positions: a first chunk of ", first, " of ", length,
              " tokens and a skip of ", skip);
  return pose_rows(length, torch::tensor({first}), torch::tensor({skip}))[0];
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
    case TrainPositionsType::pose: {  // f uniform in [1, (T + 1) / 2], u in [0, range - T], per sequence
      const auto first = torch::randint(1, std::max<int64_t>((length + 1) / 2, 1) + 1, {rows}, torch::kLong);
      const auto skip = torch::randint(0, range - length + 1, {rows}, torch::kLong);
      return pose_rows(length, first, skip).to(device);
    }
  }
  TORCH_INTERNAL_ASSERT(false, "unknown train_positions.type");
}

}  // namespace ropelab
