// The few Slurm commands ddp-watch runs, and spawning the watched command.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ddp::watch {

// Runs argv (PATH lookup) and returns its standard output; "" when it cannot run or fails.
std::string capture(const std::vector<std::string>& argv);

struct Step {
  std::string id;     // "12.0"
  std::string nodes;  // its hostlist, "node[01-03]"
};

// The job's running steps, without the batch and extern steps; empty outside a job or
// without squeue.
std::vector<Step> running_steps(const std::string& job_id);

// Runs argv (PATH lookup), its output going where this process's goes; whether it exited 0.
bool run_command(const std::vector<std::string>& argv);

// Sends `signal` (a name such as "ABRT", "KILL") to every task of `step` with scancel.
// Returns whether scancel succeeded.
bool signal_step(const std::string& step, const std::string& signal);

struct Child {
  pid_t pid = -1;
  int out = -1;  // read ends of its stdout and stderr
  int err = -1;
};

// This program's own path, for running it as a helper step.
std::string self_path();

// Starts `command` in a process group of its own, stdout and stderr piped back, with `env`
// ("NAME=value") added to this process's environment. pid -1 when it could not start.
Child spawn(const std::vector<std::string>& command, const std::vector<std::string>& env);

}  // namespace ddp::watch
