// What the plugin remembers between callbacks of one Slurm process (srun, sbatch, slurmstepd).
#pragma once

#include <optional>
#include <string>

#include "config.hpp"
#include "envfile.hpp"
#include "environment.hpp"
#include "spank_api.hpp"

namespace ddp {

struct PluginState {
  Config config;                       // from plugstack.conf, parsed in slurm_spank_init
  bool requested = false;              // --ddp was given (command line, #SBATCH or environment)
  Mode mode = Mode::tasks;             // its value
  bool active = false;                 // this step's tasks get the environment
  std::optional<std::string> failure;  // found in user_init, reported from task_init
  StepPlan plan;                       // computed once per node in user_init
  EnvList site_env;                    // from config.env_file
  EnvList socket_env;                  // socket_ifname=auto: NCCL/GLOO_SOCKET_IFNAME of this node
  unsigned step_cpus = 0;              // CPUs of slurmstepd's affinity mask (the step's), 0 unknown
};

// The state of this process; one instance, owned by plugin.cpp.
PluginState& plugin_state();

// Reports `message` to the user as "ddp: message" (never used as a format string).
void report_error(const std::string& message);
void report_info(const std::string& message);

// The --ddp option callback body: validates the mode and records it.
int on_ddp_option(const char* value);

// srun: refuses layouts the chosen mode cannot run, before any task starts.
int local_user_init(spank_t sp);

// slurmstepd, once per node: computes the step plan and checks that rank 0 can serve it.
int remote_user_init(spank_t sp);

// slurmstepd, once per task: exports the environment of this task.
int remote_task_init(spank_t sp);

}  // namespace ddp
