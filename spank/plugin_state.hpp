// What the plugin remembers between callbacks of one Slurm process (srun, sbatch, slurmstepd).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "libddp/core/config.hpp"
#include "libddp/core/envfile.hpp"
#include "libddp/core/environment.hpp"
#include "libddp/core/step.hpp"
#include "spank/spank_api.hpp"

namespace ddp {

// Why this node refuses the step. `everywhere`: the cause lies in facts every node shares
// (plugstack.conf, the step's layout), so every node refuses alike and no node needs to end the
// others; otherwise this node asks Slurm to end the step on all of them.
struct Refusal {
  std::string message;
  bool everywhere = false;
};

struct PluginState {
  Config config;                            // from plugstack.conf, parsed in slurm_spank_init
  std::optional<std::string> config_error;  // plugstack.conf did not parse: --ddp is refused
  bool requested = false;                   // --ddp was given (command line, #SBATCH or env)
  Mode mode = Mode::tasks;                  // its value
  bool active = false;                      // this step's tasks get the environment
  std::optional<Refusal> refusal;           // found in user_init, applied in task_init
  bool cancel_requested = false;            // this node asked Slurm to end the step
  bool verbose = false;                     // srun -v: explain the choice on the task's stderr
  std::string node;                         // this node's name in the step
  StepPlan plan;                            // computed once per node in user_init
  std::vector<std::uint32_t> global_ids;    // Slurm's task ids on this node, by local id
  HeadAddress address;                      // MASTER_ADDR and where it came from
  EnvList site_env;                         // from config.env_file
  EnvList socket_env;      // socket_ifname=auto: NCCL/GLOO_SOCKET_IFNAME of this node
  unsigned step_cpus = 0;  // CPUs of slurmstepd's affinity mask (the step's), 0 unknown
};

// The state of this process; one instance, owned by plugin.cpp.
PluginState& plugin_state();

// Reports `message` to the user as "ddp: message" (never used as a format string).
void report_error(const std::string& message);

// The --ddp option callback body: validates the mode and records it.
int on_ddp_option(const char* value, bool remote);

// srun: refuses layouts the chosen mode cannot run, before any task starts.
int local_user_init(spank_t sp);

// slurmstepd, once per node: decides the step on this node, or the refusal.
int remote_user_init(spank_t sp);

// slurmstepd, once per task, in the task's process before exec: exports the environment, or
// ends the task (exit status 1) when the step is refused, whether the plugin is required or
// optional in plugstack.conf.
int remote_task_init(spank_t sp);

// slurmstepd, once per ended task: after a refusal on this node only, asks Slurm to end the
// step on every node, so that no rank waits in init_process_group for a rank that never starts.
int remote_task_exit(spank_t sp);

}  // namespace ddp
