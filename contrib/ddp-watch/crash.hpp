// The crash summary: the first failure of a step, told apart from the ranks that died because
// of it (a lost peer, or the step being ended by srun).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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

// Parses one of srun's task-end lines; nothing for any other line, or for a task list that
// names more than k_max_tasks tasks.
std::optional<TaskEnd> parse_task_end(std::string_view text);

// The most task ids one task-end line, and all of them together, may name: a step of more is
// not real, and a forged line must not cost memory (4 bytes an id).
inline constexpr int k_max_tasks = 1 << 17;

// Whether `line` is Slurm's own: srun's (no task label, "srun: ...") or slurmstepd's
// ("slurmstepd: ..." or "slurmstepd-NODE: ...", which srun may put under a task's label).
bool is_srun_line(const Line& line);
bool is_stepd_line(std::string_view text);

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
  bool root_cause = false;  // under its agent's "Root Cause (first observed failure):"
};

// Everything the summary needs, gathered from the step's output in the order it arrived.
struct CrashFacts {
  std::vector<TaskEnd> ends;
  std::vector<WorkerFailure> workers;               // torchrun only
  std::vector<std::pair<int, std::string>> errors;  // task, the last exception line it printed
  bool oom_event = false;  // slurmstepd saw the kernel's OOM killer in the step
  bool task_is_rank = true;
  // The RANK of each srun task id, where it is not the task id itself: Slurm's layout of a step
  // whose ranks follow its node list (layout.hpp). Empty: each task's rank is its id.
  std::map<int, int> rank_of_task;
};

// Accumulates facts line by line; lines that say nothing about an ending are ignored. Facts
// come only from srun's and slurmstepd's own lines and from torchrun's failure table; what a
// task printed is kept as its last exception line, to be quoted, never read as a fact.
class CrashReader {
 public:
  void add(const Line& line);
  void set_task_is_rank(bool value) { facts_.task_is_rank = value; }
  void set_rank_of_task(std::map<int, int> ranks) { facts_.rank_of_task = std::move(ranks); }
  // Whether the command is srun: only then are unlabelled "srun: error: ..." lines srun's.
  void set_srun(bool value) { srun_ = value; }
  const CrashFacts& facts() const { return facts_; }

 private:
  // One task's torchrun failure table being read. A plain struct with flags, not a
  // std::optional: GCC 16 at -O2 reports an optional's strings as maybe-uninitialized when it
  // is reassigned (Debian unstable's GCC 16).
  struct Table {
    bool open = false;       // after "Failures:" or "Root Cause (first observed failure):"
    bool in_worker = false;  // after "[N]:"
    bool root_cause = false; // in the "Root Cause" part (before or after "Failures:")
    WorkerFailure worker;
  };
  void add_torchrun(int task, std::string_view text);
  void add_error(int task, std::string_view text);
  void flush(Table& table);
  CrashFacts facts_;
  bool stopping_ = false;
  bool srun_ = true;
  std::size_t task_ids_ = 0;  // task ids held in facts_.ends
  std::map<int, Table> tables_;
};

// Returns the summary, e.g. "first failure: rank 3 on node02, killed by SIGKILL (signal 9);
// collateral: ranks 0-2,4-5 (lost a peer or stopped by srun)"; "" when nothing failed. The
// first failure is the earliest ending before srun or Slurm stopped the step, one killed by a
// signal before one that exited (the others exit when they lose their peer).
std::string crash_summary(const CrashFacts& facts);

}  // namespace ddp::watch
