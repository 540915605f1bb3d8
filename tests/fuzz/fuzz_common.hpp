// Shared by the libFuzzer targets: the template, a fixed site profile and job, and the checks
// every input must pass whether ddpgen accepts it or not.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "gen/core/model.hpp"
#include "gen/core/plan.hpp"
#include "gen/core/render.hpp"

namespace ddpgen::fuzz {

// Stops the fuzzer with what broke; libFuzzer saves the input that got here.
[[noreturn]] inline void broken(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "fuzz invariant broken: %.*s: %.*s\n", static_cast<int>(what.size()),
               what.data(), static_cast<int>(detail.size()), detail.data());
  std::abort();
}

// Returns the text of a file the build named, or stops: without it nothing can be checked.
inline std::string read_or_die(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) broken("cannot read", path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A message for a terminal: one line, no control characters (a value written raw into it could
// move the cursor or hide text).
inline void check_message(const Error& error) {
  const std::string text = error.to_string();
  if (error.message.empty()) broken("empty error message", text);
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) broken("control character in an error message", text);
  }
}

// Renders plan with the installed template; a plan that passed every check always renders,
// and the script holds no control character but newlines and tabs (inside quotes).
inline void check_render(const Plan& plan) {
  static const std::string k_template = read_or_die(DDP_FUZZ_TEMPLATE);
  // templates/task-setup.sh, beside the template.
  static const std::string k_setup_path =
      std::string(DDP_FUZZ_TEMPLATE).substr(0, std::string(DDP_FUZZ_TEMPLATE).rfind('/') + 1) +
      "task-setup.sh";
  static const std::string k_setup = read_or_die(k_setup_path.c_str());
  auto script =
      render(plan, {"fuzz", "fuzz.yaml", "sbatch.sh.mustache", k_template, k_setup_path, k_setup});
  if (!script) broken("a checked plan does not render", script.error().to_string());
  for (char c : *script) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7f)
      broken("control character in the script", std::to_string(u));
  }
}

}  // namespace ddpgen::fuzz
