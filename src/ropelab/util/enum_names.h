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

/// The `type` of the row of a registry (rows with `name` and `type`) named `name`; an unknown
/// name fails listing the rows' names. The position and task registries spell their types so.
template <typename Rows>
auto parse_row_name(const Rows& rows, const std::string& name, const char* what) {
  std::string valid;
  for (const auto& row : rows) {
    if (name == row.name) return row.type;
    valid += (valid.empty() ? "" : " | ") + std::string(row.name);
  }
  TORCH_CHECK(false, "unknown ", what, " '", name, "' (expected ", valid, ")");
}

template <typename Enum, size_t N>
std::string enum_name(Enum value, const EnumNames<Enum, N>& names) {
  for (const auto& [v, spelling] : names)
    if (v == value) return spelling;
  TORCH_INTERNAL_ASSERT(false, "unnamed enum value");
}

}  // namespace ropelab
