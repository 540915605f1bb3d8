// srun's side of --ddp: checks that need only the step's shape, done before launch so that a
// wrong layout costs nothing. Slurm ignores this refusal when the plugin is `optional` in
// plugstack.conf; every node then refuses the same layout in slurmstepd, before any task runs.
#include <cstdint>
#include <string>

#include "libddp/core/step.hpp"
#include "spank/plugin_state.hpp"

namespace ddp {

int local_user_init(spank_t sp) {
  PluginState& state = plugin_state();
  if (!state.requested) return 0;

  std::uint32_t nnodes = 0;
  std::uint32_t ntasks = 0;
  if (spank_get_item(sp, S_JOB_NNODES, &nnodes) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS) {
    return 0;  // the shape is unknown here; slurmstepd checks it again per node
  }
  if (auto layout = check_launcher_layout(state.mode, ntasks, nnodes); !layout) {
    report_error(layout.error().message);
    return -1;
  }
  return 0;
}

}  // namespace ddp
