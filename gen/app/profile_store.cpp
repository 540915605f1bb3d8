#include "gen/app/profile_store.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include "gen/app/files.hpp"
#include "gen/core/profile.hpp"

namespace ddpgen::app {
namespace {

namespace fs = std::filesystem;

constexpr int k_max_extends_depth = 8;

bool is_path(const std::string& arg) {
  return arg.find('/') != std::string::npos || arg.ends_with(".yaml") || arg.ends_with(".yml");
}

Result<Profile> load_chain(const ProfileFile& file, const std::vector<std::string>& dirs,
                           std::vector<ProfileFile>* chain, int depth) {
  auto text = read_file(file.path);
  if (!text) return std::unexpected(text.error());
  auto doc = read_profile_doc(*text, file.path);
  if (!doc) return std::unexpected(doc.error());
  Profile base;
  if (!doc->extends.empty()) {
    if (depth >= k_max_extends_depth)
      return ddp::fail({file.path, 1, 1}, "\"extends\" nests more than 8 deep (a cycle?)");
    // A base named without a path is looked for next to this profile first.
    std::vector<std::string> search = dirs;
    search.insert(search.begin(), fs::path(file.path).parent_path().string());
    std::string target = doc->extends;
    if (target.find('/') != std::string::npos && !fs::path(target).is_absolute())
      target = (fs::path(file.path).parent_path() / target).lexically_normal().string();
    auto parent_file = find_profile(target, search);
    if (!parent_file)
      return ddp::fail({file.path, 1, 1}, "extends: " + parent_file.error().message);
    auto parent = load_chain(*parent_file, dirs, chain, depth + 1);
    if (!parent) return parent;
    base = *parent;
  }
  if (chain) chain->push_back(file);
  auto profile = decode_profile(*doc, base);
  if (profile) profile->name = file.name;
  return profile;
}

}  // namespace

Result<ProfileFile> find_profile(const std::string& arg, const std::vector<std::string>& dirs) {
  if (is_path(arg)) {
    if (!fs::is_regular_file(arg)) return ddp::fail({arg, 0, 0}, "no such profile file");
    return ProfileFile{fs::path(arg).stem().string(), arg};
  }
  std::string searched;
  for (const auto& dir : dirs) {
    const fs::path candidate = fs::path(dir) / (arg + ".yaml");
    if (fs::is_regular_file(candidate)) return ProfileFile{arg, candidate.string()};
    searched += (searched.empty() ? "" : ":") + dir;
  }
  return ddp::fail({"--profile " + arg, 0, 0}, "no profile \"" + arg + "\" (searched " + searched +
                                                   "; \"ddpgen profiles\" lists them)");
}

Result<Profile> load_profile(const std::string& name_or_path, const std::vector<std::string>& dirs,
                             std::vector<ProfileFile>* chain) {
  auto file = find_profile(name_or_path, dirs);
  if (!file) return std::unexpected(file.error());
  return load_chain(*file, dirs, chain, 0);
}

std::vector<ProfileFile> list_profiles(const std::vector<std::string>& dirs) {
  std::map<std::string, std::string> found;
  for (const auto& dir : dirs) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().extension() != ".yaml" || !entry.is_regular_file()) continue;
      found.emplace(entry.path().stem().string(), entry.path().string());
    }
  }
  std::vector<ProfileFile> out;
  for (const auto& [name, path] : found) out.push_back({name, path});
  return out;
}

}  // namespace ddpgen::app
