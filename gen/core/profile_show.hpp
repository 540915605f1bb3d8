// The effective profile after its "extends:" chain, as YAML with the file and line that set
// each value: what "ddpgen profile show NAME" prints.
#pragma once

#include <string>
#include <vector>

#include "gen/core/model.hpp"

namespace ddpgen {

// Returns profile as a YAML document that decodes to the same values, each key followed by a
// comment naming where it came from (profile.origin); files lists the chain, base first.
std::string show_profile(const Profile& profile, const std::vector<std::string>& files);

}  // namespace ddpgen
