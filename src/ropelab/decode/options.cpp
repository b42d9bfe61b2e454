#include "ropelab/decode/options.h"

#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {
const EnumNames<LengthPenalty, 2> kPenaltyNames{{{LengthPenalty::gnmt, "gnmt"}, {LengthPenalty::average, "average"}}};
}  // namespace

std::string to_string(LengthPenalty v) { return enum_name(v, kPenaltyNames); }
LengthPenalty parse_length_penalty(const std::string& s) {
  return parse_enum(s, kPenaltyNames, "length penalty formula");
}

}  // namespace ropelab
