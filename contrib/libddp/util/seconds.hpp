// Durations written for people ("90", "90s", "5m", "1h30m"), read the same by every program
// (ddp-watch's --timeout and ddpgen's watchdog.timeout).
#pragma once

#include <string_view>

#include "libddp/util/result.hpp"

namespace ddp {

// Seconds in `text`: a number of seconds, or numbers each followed by d, h, m or s, largest
// first or not ("1h30m", "90s"). Zero, negative, malformed or over a year is an error naming
// `description` and the value: `--timeout "5q": expected a duration such as 90, 90s, 5m, 1h
// or 1h30m`.
Result<long> parse_seconds(std::string_view text, std::string_view description);

}  // namespace ddp
