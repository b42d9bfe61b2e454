#include "ropelab/options/config.h"

#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {

const EnumNames<LrSchedule, 3> kScheduleNames{
    {{LrSchedule::noam, "noam"}, {LrSchedule::inverse_sqrt, "inverse_sqrt"}, {LrSchedule::constant, "constant"}}};

// Control characters as escapes, so that the message stays one line.
std::string one_line(const std::string& message) {
  std::string out;
  for (char c : message) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 && c != '\t') {
      static const char* hex = "0123456789abcdef";
      out += std::string("\\x") + hex[u >> 4] + hex[u & 15];
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string to_string(LrSchedule v) { return enum_name(v, kScheduleNames); }
LrSchedule parse_lr_schedule(const std::string& s) { return parse_enum(s, kScheduleNames, "lr schedule"); }

ConfigError::ConfigError(const std::string& message) : std::runtime_error(one_line(message)) {}

}  // namespace ropelab
