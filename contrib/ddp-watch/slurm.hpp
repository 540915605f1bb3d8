// The Slurm clients ddp-watch runs, each with a deadline (libddp/sys/exec.hpp).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "ddp-watch/schedule.hpp"

namespace ddp::watch {

// Writes "ddp-watch: TEXT" on stderr, TEXT made printable (text::printable): a verdict or a
// summary quotes what the tasks printed, which must not reach the terminal raw.
void announce(const std::string& text);

// The job's running steps (squeue), as JOB.STEP with the job's own id; empty outside a job,
// without squeue, or when squeue does not answer within its deadline.
std::vector<StepRow> running_steps(const std::string& job_id);

// Runs argv, its output going where this process's goes, for at most `deadline`; whether it
// exited 0. A failure to start or a passed deadline is said on stderr.
bool run_command(const std::vector<std::string>& argv,
                 std::chrono::seconds deadline = std::chrono::seconds(30));

// Runs argv for at most `deadline` and returns its standard output; "" when it cannot run,
// fails or passes the deadline (said on stderr).
std::string capture(const std::vector<std::string>& argv,
                    std::chrono::seconds deadline = std::chrono::seconds(30));

// Sends `signal` (a name such as "ABRT", "KILL") to every task of `step` with scancel.
// Returns whether scancel succeeded.
bool signal_step(const std::string& step, const std::string& signal);

// This program's own path, for running it as a helper step.
std::string self_path();

}  // namespace ddp::watch
