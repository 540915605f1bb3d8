// From the lines a stalled step printed after the signal to the verdict and the stacks file.
#pragma once

#include <string>
#include <vector>

#include "ddp-watch/crash.hpp"
#include "ddp-watch/dump_plan.hpp"
#include "ddp-watch/output.hpp"
#include "libddp/util/suspect.hpp"

namespace ddp::watch {

struct StallReport {
  std::string verdict;  // one line, see verdict()
  std::string stacks;   // every dump, grouped by task, for the stacks file
  std::size_t dumps = 0;
  std::vector<Suspect> suspects;  // the nodes the stall points at (evidence.hpp), for --heal
};

// `captured`: the step's lines since the stacks were asked for; `facts`: srun's task endings
// (they give each task's node); `tasks`: every task id seen in the step's output; `notices`:
// the stack helper's record of which process it signalled when (torchrun).
StallReport stall_report(const std::vector<Line>& captured, const CrashFacts& facts,
                         const std::vector<int>& tasks,
                         const std::vector<StepProcess>& notices = {});

}  // namespace ddp::watch
