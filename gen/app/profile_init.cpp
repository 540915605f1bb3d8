// ddpgen profile init: a draft profile from the live cluster.
#include <iostream>

#include "gen/app/commands.hpp"
#include "gen/app/files.hpp"

namespace ddpgen::app {

Result<void> profile_init(const std::string& name, const std::string& output) {
  // The name becomes a YAML scalar and a file name: keep it to a safe set.
  const bool ok = !name.empty() && name.find_first_not_of(
                                       "abcdefghijklmnopqrstuvwxyz"
                                       "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                       "0123456789_.-") == std::string::npos;
  if (!ok)
    return ddp::fail({"--name", 0, 0},
                     "\"" + name.substr(0, 40) + "\": use letters, digits, '_', '.' and '-' only");
  auto facts = read_live_cluster();
  if (!facts) return std::unexpected(facts.error());
  const std::string text = draft_profile(*facts, name);
  if (output.empty()) {
    std::cout << text;
    return {};
  }
  return write_file(output, text);
}

}  // namespace ddpgen::app
