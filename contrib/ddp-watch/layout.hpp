// Slurm's task layout of a step (`sattach --layout JOB.STEP`), and the RANK each of its tasks
// gets where ranks are numbered along the step's node list (--ddp in tasks mode, ddpgen's
// per-task setup): srun names a failed task by its task id (SLURM_PROCID), which Slurm 26.05
// numbers in topology order on a site with a topology plugin, so the crash summary turns it
// into the rank the program had. Pure: text in, values out.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::watch {

// The step's nodes in the order of its node list (SLURM_STEP_NODELIST), each with the task ids
// Slurm placed there in the order of their local ids (SLURM_LOCALID).
struct StepLayout {
  struct Node {
    std::string name;
    std::vector<int> tasks;
  };
  std::vector<Node> nodes;
};

// Parses what `sattach --layout` prints (the same on Slurm 22.05 to 26.05):
//   Job step layout:
//           6 tasks, 3 nodes (node[01-03])
//
//           Node 0 (node01), 2 task(s): 2 3
// Nothing when the text is not that, or its counts disagree (a task id twice, ids beyond the
// step's task count, a node's count unlike its ids, more than k_max_layout_tasks tasks).
std::optional<StepLayout> parse_step_layout(std::string_view text);

// The most tasks a layout may hold: more is no real step.
inline constexpr int k_max_layout_tasks = 1 << 17;

// Each task id's RANK where ranks follow the node list: the tasks of the nodes listed before
// its node plus its local id, as the --ddp plugin numbers them (libddp's task_rank()).
std::map<int, int> ranks_by_node(const StepLayout& layout);

// Whether the command's tasks get their RANK that way: srun with --ddp or --ddp=tasks among its
// options, or without any while `spank_ddp` (SLURM_SPANK__SLURM_SPANK_OPTION_ddp_ddp: sbatch or
// salloc --ddp, "(null)" for no value) asks for tasks mode; or the per-task setup of a script
// ddpgen wrote for a site without the plugin ("ddpgen-task tasks ..."). A bare --ddp is tasks
// mode unless the program is a per-node launcher (the site's default_mode may say torchrun; the
// caller knows the launcher).
bool numbers_ranks_by_node(const std::vector<std::string>& command,
                           std::optional<std::string_view> spank_ddp);

}  // namespace ddp::watch
