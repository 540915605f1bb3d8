// The order in which one node's processes of a step are asked for their stacks, so that
// processes sharing one output (torchrun's workers) print one after another, never
// interleaved, and their launcher cannot react to a worker's death in between.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ddp::watch {

struct StepProcess {
  pid_t pid = 0;
  pid_t parent = 0;
  int task = -1;  // SLURM_PROCID
  int rank = -1;  // RANK, when the process has one (torchrun's workers)
};

struct DumpPlan {
  std::vector<StepProcess> stop;  // SIGSTOP first: launchers (processes with children here)
  std::vector<StepProcess> dump;  // then SIGABRT one at a time, waiting for each to end
};

// Launchers stop first; workers dump by rank (then pid), their launchers after them.
DumpPlan plan_dump(const std::vector<StepProcess>& processes);

// One line the helper prints per dump, read back by the watcher to name ranks:
// "ddp-watch-dump: task 1 rank 3 pid 4242".
std::string dump_notice(const StepProcess& p);
// Parses dump_notice(); false for any other line.
bool parse_dump_notice(const std::string& line, StepProcess& out);

}  // namespace ddp::watch
