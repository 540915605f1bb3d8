#include "gen/core/profile.hpp"

#include "gen/core/profile_keys.hpp"
#include "gen/core/yaml_strict.hpp"

namespace ddpgen {

namespace {

void decode_into(Profile& p, const StrictReader& r, const YAML::Node& root) {
  const auto& table = profile_table();
  for (const auto& [key, value] : r.entries(root, "", table.names())) {
    const auto& row = table.at(key);
    // extends was read first (read_profile_doc); lists, env and sections record each part.
    if (key != "extends" && !origin_by_part(row.type))
      p.origin[key] = profile_origin(r, value, key);
    row.set(p, r, value, key);
  }
}

}  // namespace

Result<ProfileDoc> read_profile_doc(const std::string& text, const std::string& file) {
  auto doc = parse_yaml(text, file);
  if (!doc) return std::unexpected(doc.error());
  ProfileDoc out{*doc, file, ""};
  try {
    StrictReader r(file);
    if (!out.root.IsMap()) r.reject(out.root, "", "a profile must be a mapping of keys");
    const YAML::Node& root = out.root;  // const: a lookup must not add the key
    if (root["extends"]) out.extends = r.string(root["extends"], "extends");
  } catch (const Error& error) {
    return std::unexpected(error);
  }
  return out;
}

Result<Profile> decode_profile(const ProfileDoc& doc, Profile base) {
  try {
    StrictReader r(doc.file);
    base.abstract = false;  // not inherited: a concrete profile may extend an abstract one
    decode_into(base, r, doc.root);
    if (base.partitions.empty() && !base.abstract)
      r.reject(doc.root, "", "a profile needs \"partitions\" (or extends one that has them)");
  } catch (const Error& error) {
    return std::unexpected(error);
  }
  return base;
}

}  // namespace ddpgen
