// The site environment file: NCCL/EFA variables applied to --ddp tasks.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "libddp/util/result.hpp"

namespace ddp {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// The largest env_file the plugin reads: a few hundred variables fit many times over.
inline constexpr std::size_t k_max_env_file = 65536;

// Parses "KEY=VALUE" lines; blank lines and lines starting with '#' are skipped, an optional
// "export " prefix is allowed, values are taken literally (no quotes, no expansion), a key set
// twice is an error. Errors name `path` and the 1-based line.
Result<EnvList> parse_env_file(std::string_view contents, std::string_view path);

}  // namespace ddp
