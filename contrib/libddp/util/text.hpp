// Text and number helpers shared by every program: the one way to read a number, to make
// untrusted text printable and quote a value for a message, to split and join, to say "3 nodes",
// and to suggest a close name.
#pragma once

#include <charconv>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "libddp/util/result.hpp"

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

// An int written as parse_uint reads it, with an optional '-' before the digits (torchrun
// writes a signal's exit code as -9), for ranks, task ids and exit codes; nothing when it
// does not fit.
inline std::optional<int> parse_int(std::string_view s) {
  const bool negative = !s.empty() && s.front() == '-';
  auto value = parse_uint<unsigned>(negative ? s.substr(1) : s);
  if (!value || *value > static_cast<unsigned>(INT_MAX) + (negative ? 1u : 0u)) return std::nullopt;
  return negative ? static_cast<int>(0u - *value) : static_cast<int>(*value);
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

// `value` in decimal, as a string of its own (for messages built with +).
inline std::string decimal(std::uint64_t value) {
  std::string out;
  append_uint(out, value);
  return out;
}

// No cut: printable() and quote() show all of `s`.
inline constexpr std::size_t k_whole = std::string_view::npos;

// The one way to make untrusted bytes safe to show to a person or write to a log: printable
// ASCII (0x20-0x7e) is kept and every other byte, the bytes of `also` too, is written \xNN
// (lower-case hex), so a hostile value cannot move the cursor, forge a log line or smuggle
// terminal controls in UTF-8. At most `max_chars` characters (escapes are never split), then
// "..." when something was cut.
std::string printable(std::string_view s, std::size_t max_chars = k_whole,
                      std::string_view also = {});

// `s` as a value inside a message: in double quotes, printable(), with `"` and `\` escaped by a
// backslash so that the value reads back unambiguously; long values cut at `max_chars`
// characters ("...") so a 10,000-node list does not flood the log.
std::string quote(std::string_view s, std::size_t max_chars = 80);

// `s` without leading and trailing blanks (space, tab, CR, LF).
std::string_view trim(std::string_view s);

// The fields of `s` between `separator`s, empty fields kept ("a,,b" -> "a", "", "b"); an empty
// `s` gives one empty field.
std::vector<std::string_view> split(std::string_view s, char separator);

// Numbers in any order, duplicates once, as ranges for a message: {5,0,1,2,3,7,8} ->
// "0-3,5,7,8" (a run of three or more is a range; two are listed). Ranks and nodes in
// ddp-check's and ddp-watch's reports read the same.
std::string format_ranges(std::vector<std::int64_t> numbers);

// `parts` (strings, string_views, a set of strings...) with `separator` between them.
template <class Range>
std::string join(const Range& parts, std::string_view separator) {
  std::string out;
  bool first = true;
  for (const auto& part : parts) {
    if (!first) out += separator;
    out += std::string_view(part);
    first = false;
  }
  return out;
}

// join() of a braced list: join({a, b}, ", ").
inline std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  return join<std::vector<std::string>>(parts, separator);
}

// `one` when n is 1, else `many` ("s" appended to `one` when `many` is empty): "node"/"nodes".
std::string noun(std::uint64_t n, std::string_view one, std::string_view many = {});

// n and its noun: "1 node", "3 nodes", "2 children" with plural(2, "child", "children").
std::string plural(std::uint64_t n, std::string_view one, std::string_view many = {});

// A whole number from `min` to `max`, written as decimal digits only; the error names
// `description`, the value and the bounds: `--port "x": expected a whole number from 1 to 65535`.
Result<std::uint64_t> parse_unsigned(std::string_view value, std::uint64_t min, std::uint64_t max,
                                     std::string_view description);

// A positive, finite decimal such as "2.5" or ".25" (std::from_chars' general form, so "1e-3"
// too); nullopt for a sign, trailing text, zero, infinity or NaN.
std::optional<double> parse_positive(std::string_view value);

// A share of something, above 0 and below 1 ("0.5"), as parse_positive() reads it: what
// ddp-check --pairs-threshold and ddpgen's preflight.pairs_threshold both accept.
std::optional<double> parse_share(std::string_view value);

// Levenshtein distance between two short names.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `name` for a "did you mean" hint, or "" when none is close: at most
// max(2, length/3) edits, so short names suggest only near misses. The first of equally close
// candidates wins.
template <class Range>
std::string did_you_mean(std::string_view name, const Range& candidates) {
  const std::size_t limit = name.size() / 3 > 2 ? name.size() / 3 : 2;
  std::string best;
  std::size_t best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    const std::size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(candidate);
    }
  }
  return best;
}

}  // namespace ddp::text
