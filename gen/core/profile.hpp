// Decoding a site profile (strict), layered over the profile it extends.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "gen/core/model.hpp"

namespace ddpgen {

// A parsed profile document, before it is applied over its base.
struct ProfileDoc {
  YAML::Node root;
  std::string file;
  std::string extends;  // name or path of the base profile; empty for none
};

// The keys a profile may have at its top level: the names of profile_table()'s rows
// (gen/core/profile_keys.hpp), as are the nested key lists below.
const std::vector<std::string>& profile_keys();
// The keys of the profile's nested mappings: node (also a partition's), partitions[],
// account, container.
const std::vector<std::string>& profile_node_keys();
const std::vector<std::string>& profile_partition_keys();
const std::vector<std::string>& profile_account_keys();
const std::vector<std::string>& profile_container_keys();

// Parses profile text and reads its "extends:" so the caller can load the base first.
Result<ProfileDoc> read_profile_doc(const std::string& text, const std::string& file);

// Returns base with every key present in doc applied over it: scalars and lists replace,
// env and node merge key by key. The caller sets name.
Result<Profile> decode_profile(const ProfileDoc& doc, Profile base);

}  // namespace ddpgen
