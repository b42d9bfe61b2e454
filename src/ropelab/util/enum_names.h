#pragma once
/// Enum <-> YAML spelling tables: one std::array of (value, name) pairs per enum.

#include <c10/util/Exception.h>

#include <array>
#include <string>
#include <utility>

namespace ropelab {

template <typename Enum, size_t N>
using EnumNames = std::array<std::pair<Enum, const char*>, N>;

/// "a | b | c": the valid spellings, for error messages.
template <typename Enum, size_t N>
std::string enum_choices(const EnumNames<Enum, N>& names) {
  std::string valid;
  for (const auto& entry : names) valid += (valid.empty() ? "" : " | ") + std::string(entry.second);
  return valid;
}

template <typename Enum, size_t N>
Enum parse_enum(const std::string& name, const EnumNames<Enum, N>& names, const char* what) {
  for (const auto& [value, spelling] : names)
    if (name == spelling) return value;
  TORCH_CHECK(false, "unknown ", what, " '", name, "' (expected ", enum_choices(names), ")");
}

template <typename Enum, size_t N>
std::string enum_name(Enum value, const EnumNames<Enum, N>& names) {
  for (const auto& [v, spelling] : names)
    if (v == value) return spelling;
  TORCH_INTERNAL_ASSERT(false, "unnamed enum value");
}

}  // namespace ropelab
