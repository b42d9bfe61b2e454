#include "ropelab/position/context_defaults.h"

#include <algorithm>

namespace ropelab {

void unset_length_settings(PositionOptions& options) {
  options.max_len(0).max_distance(0).scale_base(0).fire_threshold(0).cope_positions(0);
  options.train_positions().range(0);
}

void resolve_length_settings(PositionOptions& options, int64_t context) {
  const PositionOptions absolute;  // the values for no one training context
  const auto c = static_cast<double>(context);
  auto& train = options.train_positions();
  if (train.range() == 0) train.range(context > 0 ? 64 * context : absolute.train_positions().range());
  // a learned table holds a row for every position training may draw
  if (options.max_len() == 0)
    options.max_len(train.drawn() ? train.range() : context > 0 ? context : absolute.max_len());
  if (options.max_distance() == 0)
    options.max_distance(context > 0 ? std::max(context / 4, options.num_buckets()) : absolute.max_distance());
  if (options.scale_base() == 0) options.scale_base(context > 0 ? c / 2 : absolute.scale_base());
  if (options.fire_threshold() == 0) options.fire_threshold(context > 0 ? c : absolute.fire_threshold());
  if (options.cope_positions() == 0)
    options.cope_positions(context > 0 ? std::max<int64_t>(context / 16, 2) : absolute.cope_positions());
}

}  // namespace ropelab
