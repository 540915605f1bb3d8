// The crash summary: the first failure of a step, told apart from the ranks that died because
// of it (a lost peer, or the step being ended by srun).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddp-watch/output.hpp"

namespace ddp::watch {

// How some tasks ended, from srun's "srun: error: node02: task 3: Killed".
struct TaskEnd {
  std::string node;
  std::vector<int> tasks;
  std::string how;          // srun's words: "Killed", "Exited with exit code 1", "Out Of Memory"
  int exit_code = -1;       // when it exited
  int signal = 0;           // when a signal ended it
  bool oom = false;         // the kernel's out-of-memory killer, as Slurm reports it
  bool after_stop = false;  // srun (or scancel) was already ending the step: collateral
};

// Parses one of srun's task-end lines; nothing for any other line.
std::optional<TaskEnd> parse_task_end(std::string_view text);

// Signal number for the words strsignal() gives and srun prints ("Killed" -> 9), else 0.
int signal_from_text(std::string_view text);
// "SIGKILL" for 9, "signal N" for one without a name here.
std::string signal_name(int signal);

// A worker's failure as torchrun reports it ("Root Cause" / "Failures" of ChildFailedError).
struct WorkerFailure {
  int rank = -1;
  int local_rank = -1;
  std::string host;
  int exit_code = 0;  // negative: killed by that signal
  std::string time;   // torchrun's timestamp, sortable as text
};

// Everything the summary needs, gathered from the step's output in the order it arrived.
struct CrashFacts {
  std::vector<TaskEnd> ends;
  std::vector<WorkerFailure> workers;               // torchrun only
  std::vector<std::pair<int, std::string>> errors;  // task, the last exception line it printed
  bool oom_event = false;  // slurmstepd saw the kernel's OOM killer in the step
  bool task_is_rank = true;
};

// Accumulates facts line by line; lines that say nothing about an ending are ignored.
class CrashReader {
 public:
  void add(const Line& line);
  void set_task_is_rank(bool value) { facts_.task_is_rank = value; }
  const CrashFacts& facts() const { return facts_; }

 private:
  void add_torchrun(std::string_view text);
  CrashFacts facts_;
  bool stopping_ = false;
  // The entry being read, while in_worker_. A plain member and a flag, not a std::optional:
  // GCC 16 at -O2 reports an optional's strings as maybe-uninitialized when it is reassigned
  // (Debian unstable's GCC 16).
  WorkerFailure worker_;
  bool in_worker_ = false;
};

// Whether an exception message says the rank lost a peer rather than failed itself.
bool is_peer_error(std::string_view text);

// Returns the summary, e.g. "first failure: rank 3 on node02, killed by SIGKILL (signal 9);
// collateral: ranks 0-2,4-5 (lost a peer or stopped by srun)"; "" when nothing failed.
std::string crash_summary(const CrashFacts& facts);

}  // namespace ddp::watch
