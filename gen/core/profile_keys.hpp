// The site profile's settings, one table per mapping (gen/core/settings.hpp): the top level,
// account, node (also a partition's), partitions[] and container.
#pragma once

#include <string>

#include "gen/core/model.hpp"
#include "gen/core/settings.hpp"

namespace ddpgen {

// The top level of a profile. Its sections and lists decode through their rows; a list over
// the base profile's says whether it adds to or replaces it.
const settings::Table<Profile>& profile_table();

// Every table of the profile: "profile" for the top level, then account, node, partition,
// container.
const settings::Catalog& profile_catalog();

// "FILE:LINE" of node, found at key path: where a value of "ddpgen profile show" came from.
std::string profile_origin(const StrictReader& r, const YAML::Node& node, const std::string& path);

// Whether key's origin is recorded part by part (lists, env, sections) rather than as a whole.
bool origin_by_part(const settings::Type& type);

}  // namespace ddpgen
