// Finding site profiles by name or path and loading them with their "extends:" chain.
#pragma once

#include <string>
#include <vector>

#include "gen/core/model.hpp"

namespace ddpgen::app {

struct ProfileFile {
  std::string name;
  std::string path;
};

// Resolves NAME or PATH: an argument containing '/' or ending in .yaml is a path; otherwise
// NAME.yaml is looked for in dirs, first match wins.
Result<ProfileFile> find_profile(const std::string& name_or_path,
                                 const std::vector<std::string>& dirs);

// Loads the profile and everything it extends; chain receives the files, base first.
Result<Profile> load_profile(const std::string& name_or_path, const std::vector<std::string>& dirs,
                             std::vector<ProfileFile>* chain = nullptr);

// Every NAME.yaml in dirs (the first of each name), sorted by name.
std::vector<ProfileFile> list_profiles(const std::vector<std::string>& dirs);

}  // namespace ddpgen::app
