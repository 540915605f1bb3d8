// The one way the project's programs run another program: argv without a shell, in a process
// group of its own, output captured, a deadline after which the whole group is killed. ddpgen
// and ddp-watch use it; the plugin and ddp-check never run a program.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "libddp/util/result.hpp"

namespace ddp::sys {

// How run() starts and bounds a program.
struct RunOptions {
  std::chrono::milliseconds deadline{std::chrono::seconds(30)};
  std::vector<std::string> env;       // "NAME=value", added to (or replacing in) ours
  bool capture = true;                // stdout captured; else it goes where ours goes
  bool merge_stderr = false;          // with capture: stderr captured too, into the same text
  std::size_t max_output = 16 << 20;  // bytes of stdout kept; the rest is read and dropped
};

// How a program ended and what it printed on stdout.
struct RunResult {
  int status = 0;   // its exit code, or 128 + the signal that ended it
  std::string out;  // stdout when captured (at most max_output bytes)
};

// Runs argv (PATH lookup) with stdin from /dev/null and stderr passed through. Fails, naming
// the program, when it cannot start or is still running at the deadline (its process group is
// then killed with SIGKILL). A program that exits does not wait for descendants that keep its
// stdout open.
Result<RunResult> run(const std::vector<std::string>& argv, const RunOptions& options = {});

// A program started by start(): its pid (also its process group) and the read ends of its
// stdout and stderr, which the caller reads and closes.
struct Started {
  pid_t pid = -1;
  int out = -1;
  int err = -1;
};

// Starts argv (PATH lookup) in a process group of its own with `env` added, stdout and stderr
// piped back; fails, naming the program and the reason, when it cannot start.
Result<Started> start(const std::vector<std::string>& argv, const std::vector<std::string>& env);

// exit_status() of a waitpid() status: the exit code, or 128 + the signal.
int exit_status(int wait_status);

// The environment block for a child: `environ` with each "NAME=value" of `add` replacing an
// entry of the same name or appended.
std::vector<std::string> child_environment(char** environ_block,
                                           const std::vector<std::string>& add);

}  // namespace ddp::sys
