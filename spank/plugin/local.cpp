// srun's side of --ddp: checks that need only the step's shape, done before launch so that a
// wrong layout costs nothing (Slurm ignores user_init failures in slurmstepd until task start).
#include <cstdint>
#include <string>

#include "plugin_state.hpp"
#include "rules.hpp"

namespace ddp {

int local_user_init(spank_t sp) {
  PluginState& state = plugin_state();
  if (!state.requested || state.mode != Mode::torchrun) return 0;

  std::uint32_t nnodes = 0;
  std::uint32_t ntasks = 0;
  if (spank_get_item(sp, S_JOB_NNODES, &nnodes) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS) {
    return 0;  // the shape is unknown here; slurmstepd checks it again per node
  }
  if (ntasks > nnodes) {
    // The same words as slurmstepd's check (rules.hpp), which sees one node at a time.
    report_error(torchrun_refusal(ntasks, std::to_string(nnodes) + " nodes"));
    return -1;
  }
  return 0;
}

}  // namespace ddp
