// ddp-watch --dump-step JOB.STEP, run by the watcher as one task per node of a torchrun step:
// finds this node's processes of the step in /proc and has them print their stacks one by one.
#pragma once

#include <string>

namespace ddp::watch {

// Returns the exit status: 0 when a process of the step was signalled, 1 when none was.
int dump_step_here(const std::string& step);

}  // namespace ddp::watch
