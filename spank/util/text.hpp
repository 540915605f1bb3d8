// Small text helpers shared by the core's parsers. Internal: not part of the core's API.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace ddp::text {

// A non-empty run of decimal digits that fits in T; signs, spaces and trailing text are
// rejected (std::from_chars alone would accept "12abc" as 12).
template <class T>
std::optional<T> parse_uint(std::string_view s) {
  static_assert(std::is_unsigned_v<T>);
  if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;
  T value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return value;
}

// Appends `value` in decimal, left-padded with zeros to `width` digits.
inline void append_uint(std::string& out, std::uint64_t value, int width = 0) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  (void)ec;  // 24 chars always fit a 64-bit value
  auto digits = static_cast<int>(end - buf);
  if (width > digits) out.append(static_cast<std::size_t>(width - digits), '0');
  out.append(buf, end);
}

// `s` in double quotes for an error message: control characters escaped so that a hostile
// value cannot forge log lines, and long values cut so a 10,000-node list does not flood them.
inline std::string quote(std::string_view s, std::size_t max_chars = 80) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out = "\"";
  std::size_t shown = s.size() > max_chars ? max_chars : s.size();
  for (char c : s.substr(0, shown)) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += k_hex[u >> 4];
      out += k_hex[u & 0xf];
    } else {
      out += c;
    }
  }
  if (shown < s.size()) out += "...";
  out += '"';
  return out;
}

}  // namespace ddp::text
