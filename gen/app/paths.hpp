// Where ddpgen looks for site profiles and templates. The only code that reads the process
// environment.
#pragma once

#include <string>
#include <vector>

namespace ddpgen::app {

// Directories searched for NAME.yaml, in order: $DDPGEN_PROFILE_PATH (colon-separated),
// ${XDG_CONFIG_HOME:-~/.config}/slurm-ddp/site-profiles, then the installed share directory;
// a ddpgen run from its build tree searches the source tree instead of the installed copy.
std::vector<std::string> profile_dirs();

// The directory holding the templates: $DDPGEN_TEMPLATE_DIR, else the source tree for a
// build-tree binary, else the installed share directory.
std::string template_dir();

}  // namespace ddpgen::app
