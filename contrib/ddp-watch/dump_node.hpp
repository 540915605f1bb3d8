// ddp-watch --freeze-step and --dump-step JOB.STEP, each run by the watcher as one task per
// node of a step: find this node's processes of the step (those its slurmstepd tracks), and stop
// them all, or have them print their stacks one by one.
#pragma once

#include <string>

namespace ddp::watch {

// Each returns the exit status: 0 when a process of the step was signalled, 1 when none was,
// 2 when `step` is not JOB.STEP.
// `at_ms`: the wall-clock time (ms since the epoch) at which the signals start on every node, this
// node's processes found and stopped before it, waited for at most 10 s; 0: at once.
int dump_step_here(const std::string& step, long long at_ms = 0);
int freeze_step_here(const std::string& step);
// Prints a probe line (activity.hpp) for each of this node's processes of the step: how many
// bytes it has written. 0 when one was read, 1 when none, 2 when `step` is not JOB.STEP.
int probe_step_here(const std::string& step);

}  // namespace ddp::watch
