#include "gen/core/duration.hpp"

#include <cstdio>
#include <vector>

namespace ddpgen::duration {
namespace {

// Splits on ':' into numbers of at most 5 digits; nothing on an empty or non-digit field.
std::optional<std::vector<long>> fields(std::string_view text) {
  std::vector<long> out;
  std::size_t start = 0;
  while (true) {
    std::size_t colon = text.find(':', start);
    std::string_view part =
        text.substr(start, colon == std::string_view::npos ? colon : colon - start);
    if (part.empty() || part.size() > 5) return std::nullopt;
    long value = 0;
    for (char c : part) {
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + (c - '0');
    }
    out.push_back(value);
    if (colon == std::string_view::npos) return out;
    start = colon + 1;
  }
}

}  // namespace

std::optional<long> parse(std::string_view text) {
  long days = 0;
  std::size_t dash = text.find('-');
  bool has_days = dash != std::string_view::npos;
  if (has_days) {
    auto d = fields(text.substr(0, dash));
    if (!d || d->size() != 1) return std::nullopt;
    days = (*d)[0];
    text = text.substr(dash + 1);
  }
  auto f = fields(text);
  if (!f || f->size() > 3) return std::nullopt;
  long total = 0;
  const auto& v = *f;
  if (has_days) {
    // D-HH, D-HH:MM, D-HH:MM:SS
    if (v[0] > 23 || (v.size() > 1 && v[1] > 59) || (v.size() > 2 && v[2] > 59))
      return std::nullopt;
    total = v[0] * 3600 + (v.size() > 1 ? v[1] * 60 : 0) + (v.size() > 2 ? v[2] : 0);
  } else if (v.size() == 1) {
    total = v[0] * 60;  // MM
  } else if (v.size() == 2) {
    if (v[1] > 59) return std::nullopt;
    total = v[0] * 60 + v[1];  // MM:SS
  } else {
    if (v[1] > 59 || v[2] > 59) return std::nullopt;
    total = v[0] * 3600 + v[1] * 60 + v[2];  // HH:MM:SS
  }
  total += days * 86400;
  if (total <= 0) return std::nullopt;
  return total;
}

std::string format(long seconds) {
  long days = seconds / 86400;
  long rest = seconds % 86400;
  char buf[48];
  if (days > 0)
    std::snprintf(buf, sizeof buf, "%ld-%02ld:%02ld:%02ld", days, rest / 3600, rest / 60 % 60,
                  rest % 60);
  else
    std::snprintf(buf, sizeof buf, "%02ld:%02ld:%02ld", rest / 3600, rest / 60 % 60, rest % 60);
  return buf;
}

}  // namespace ddpgen::duration
