#include "gen/app/paths.hpp"

#include <cstdlib>
#include <filesystem>

namespace ddpgen::app {
namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// True when this executable lives under the build directory it was compiled in, i.e. it has
// not been installed: then the source tree's profiles and templates are the current ones.
bool running_from_build_tree() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return false;
  const std::string build = fs::weakly_canonical(DDPGEN_BUILD_DIR, ec).string();
  return !ec && exe.string().starts_with(build + "/");
}

}  // namespace

std::vector<std::string> profile_dirs() {
  std::vector<std::string> dirs;
  const std::string path = env("DDPGEN_PROFILE_PATH");
  for (std::size_t start = 0; start <= path.size() && !path.empty();) {
    auto colon = path.find(':', start);
    std::string dir = path.substr(start, colon == std::string::npos ? colon : colon - start);
    if (!dir.empty()) dirs.push_back(dir);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  std::string config = env("XDG_CONFIG_HOME");
  if (config.empty() && !env("HOME").empty()) config = env("HOME") + "/.config";
  if (!config.empty()) dirs.push_back(config + "/slurm-ddp/site-profiles");
  dirs.push_back(running_from_build_tree() ? DDPGEN_SOURCE_DIR "/site-profiles"
                                           : DDPGEN_SHARE_DIR "/site-profiles");
  return dirs;
}

std::string template_dir() {
  const std::string dir = env("DDPGEN_TEMPLATE_DIR");
  if (!dir.empty()) return dir;
  return running_from_build_tree() ? DDPGEN_SOURCE_DIR "/templates" : DDPGEN_SHARE_DIR "/templates";
}

}  // namespace ddpgen::app
