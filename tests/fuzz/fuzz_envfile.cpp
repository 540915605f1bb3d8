// libFuzzer: the site env_file (KEY=VALUE lines). Every accepted variable has a non-empty name
// without '=' or a newline, so spank_setenv() never receives a malformed name.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "libddp/core/envfile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto env = ddp::parse_env_file(text, "/etc/slurm/ddp.env");
  if (!env) {
    if (env.error().message.find("/etc/slurm/ddp.env") == std::string_view::npos) __builtin_trap();
    return 0;
  }
  for (const auto& [name, value] : *env) {
    if (name.empty() || name.find_first_of("=\n") != std::string_view::npos) __builtin_trap();
    if (value.find('\n') != std::string_view::npos) __builtin_trap();
  }
  return 0;
}
