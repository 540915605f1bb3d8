#include "libddp/util/text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace ddp::text {
namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Appends `c` as printable() shows it: itself, or \xNN.
void append_shown(std::string& out, char c, std::string_view also) {
  static constexpr char k_hex[] = "0123456789abcdef";
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f && also.find(c) == std::string_view::npos) {
    out += c;
    return;
  }
  out += "\\x";
  out += k_hex[u >> 4];
  out += k_hex[u & 0xf];
}

// The characters append_shown() writes for `c`.
std::size_t shown_width(char c, std::string_view also) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x20 && u < 0x7f && also.find(c) == std::string_view::npos ? 1 : 4;
}

// printable() with `"` and `\` written \" and \\ (quote()'s inside).
void append_escaped(std::string& out, std::string_view s, std::size_t max_chars,
                    std::string_view also, bool quoted) {
  std::size_t used = 0;
  for (char c : s) {
    const bool backslashed = quoted && (c == '"' || c == '\\');
    const std::size_t width = backslashed ? 2 : shown_width(c, also);
    if (max_chars != k_whole && used + width > max_chars) {
      out += "...";
      return;
    }
    used += width;
    if (backslashed) {
      out += '\\';
      out += c;
    } else {
      append_shown(out, c, also);
    }
  }
}

}  // namespace

std::string printable(std::string_view s, std::size_t max_chars, std::string_view also) {
  std::string out;
  out.reserve(s.size() < 256 ? s.size() : 256);
  append_escaped(out, s, max_chars, also, false);
  return out;
}

std::string quote(std::string_view s, std::size_t max_chars) {
  std::string out = "\"";
  append_escaped(out, s, max_chars, {}, true);
  out += '"';
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

std::string format_ranges(std::vector<std::int64_t> numbers) {
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  std::string out;
  for (std::size_t i = 0; i < numbers.size();) {
    std::size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(numbers[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(numbers[j]);
    i = j + 1;
  }
  return out;
}

std::vector<std::string_view> split(std::string_view s, char separator) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    const std::size_t end = s.find(separator, start);
    if (end == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
}

std::string noun(std::uint64_t n, std::string_view one, std::string_view many) {
  if (n == 1) return std::string(one);
  if (!many.empty()) return std::string(many);
  return std::string(one) + "s";
}

std::string plural(std::uint64_t n, std::string_view one, std::string_view many) {
  std::string out = decimal(n);
  out += ' ';
  out += noun(n, one, many);
  return out;
}

Result<std::uint64_t> parse_unsigned(std::string_view value, std::uint64_t min, std::uint64_t max,
                                     std::string_view description) {
  auto number = parse_uint<std::uint64_t>(value);
  if (number && *number >= min && *number <= max) return *number;
  std::string message(description);
  message += ' ';
  message += quote(value);
  message += ": expected a whole number from ";
  append_uint(message, min);
  message += " to ";
  append_uint(message, max);
  return fail(std::move(message));
}

std::optional<double> parse_positive(std::string_view value) {
  if (value.empty() || !((value.front() >= '0' && value.front() <= '9') || value.front() == '.'))
    return std::nullopt;
  double number = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (ec != std::errc{} || end != value.data() + value.size() || !std::isfinite(number) ||
      number <= 0)
    return std::nullopt;
  return number;
}

std::optional<double> parse_share(std::string_view value) {
  const auto share = parse_positive(value);
  if (!share || *share >= 1) return std::nullopt;
  return share;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace ddp::text
