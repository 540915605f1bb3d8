#include "libddp/util/seconds.hpp"

#include <charconv>
#include <string>

#include "libddp/util/text.hpp"

namespace ddp {

Result<long> parse_seconds(std::string_view text, std::string_view description) {
  constexpr long k_max = 366L * 86400;
  const std::string original(text);
  auto bad = [&] {
    return fail(std::string(description) + " " + text::quote(original) +
                ": expected a duration such as 90, 90s, 5m, 1h or 1h30m");
  };
  long total = 0;
  bool bare = false;  // a number without a unit: only alone
  while (!text.empty()) {
    long value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end == text.data() || value < 0 || value > k_max) return bad();
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
    long unit = 1;
    if (text.empty()) {
      bare = true;
    } else {
      const char u = text.front();
      unit = u == 's' ? 1 : u == 'm' ? 60 : u == 'h' ? 3600 : u == 'd' ? 86400 : 0;
      if (unit == 0) return bad();
      text.remove_prefix(1);
    }
    if (bare && total != 0) return bad();  // "1h30": which unit is 30?
    total += value * unit;
    if (total > k_max) return bad();
  }
  if (total <= 0) return bad();
  return total;
}

}  // namespace ddp
