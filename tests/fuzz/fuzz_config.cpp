// libFuzzer: the plugin's plugstack.conf arguments. One argument per line of the input, as
// Slurm splits the line on blanks; any input gives a Config or an error with a message.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "libddp/core/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> args;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    args.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  auto config = ddp::parse_config(args);
  if (!config && config.error().message.empty()) __builtin_trap();
  if (config && config->port_range.first > config->port_range.last) __builtin_trap();
  return 0;
}
