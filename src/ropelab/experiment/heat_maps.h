#pragma once
/// Retrieval heat maps of an ablation, one per variant and measure (passkey, each retrieval
/// task): accuracy pooled over the variant's seeds per document length (columns) and depth of
/// the asked needle (rows), in OUT/heat_maps/.

#include "ropelab/experiment/plots.h"
#include "ropelab/experiment/spec.h"

namespace ropelab {

/// The heat maps of every variant for the grids `asked` names (their lengths and depths).
void write_heat_maps(const PlotInputs& in, const TestEvaluations& asked);

}  // namespace ropelab
