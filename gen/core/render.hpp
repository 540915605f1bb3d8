// Turning a Plan into script text through a mustache template. A variable the template uses
// but the data lacks is an error, never an empty string.
#pragma once

#include <string>

#include "gen/core/plan.hpp"

namespace ddpgen {

struct RenderInput {
  std::string version;        // ddpgen's version, for the header
  std::string job_file;       // as the user named it, for the header
  std::string template_name;  // for error messages
  std::string template_text;
  std::string task_setup_name;  // templates/task-setup.sh: the per-task code without the plugin
  std::string task_setup_text;
};

// Renders plan. {{name}} shell-quotes the value; {{{name}}} writes it as is and is used only
// for text ddpgen generated or checked.
Result<std::string> render(const Plan& plan, const RenderInput& input);

}  // namespace ddpgen
