#pragma once
/// What every corpus metric (bleu.h, chrf.h, ter.h) shares: input checks, the signature's
/// version field and number formatting.

#include <string>
#include <vector>

namespace ropelab {

/// Throws std::invalid_argument unless there is a reference set and each has a line per hypothesis.
void check_line_counts(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs);
/// "version:ropelab-X.Y.Z", the last field of every signature.
std::string metric_version_tag();
/// printf's %.Nf.
std::string format_fixed(double value, int digits);

}  // namespace ropelab
