// The stall verdict: which ranks wait in a collective, which are elsewhere, and where.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ddp-watch/dump_plan.hpp"
#include "ddp-watch/traceback.hpp"

namespace ddp::watch {

enum class State {
  collective,  // blocked in a torch.distributed call, waiting for the others
  elsewhere,   // anywhere else: the suspects
  launcher,    // a launcher process (torchrun's agent), not a rank
  child,       // a process a rank started (a DataLoader worker, a subprocess), not a rank
};

// One process of the step, classified from its dump.
struct Process {
  int task = -1;  // srun task id
  int rank = -1;  // global rank, -1 when the output does not tell (torchrun workers)
  std::string node;
  State state = State::elsewhere;
  std::string collective;  // the torch.distributed function it waits in
  Frame where;             // the innermost frame of the program itself (not Python's, not torch's)
  Frame innermost;         // the innermost frame of all
};

// How tasks map to ranks and nodes, from srun's own lines and the launcher.
struct Layout {
  std::map<int, std::string> node_of_task;
  bool task_is_rank = true;  // srun tasks; false under torchrun (a task is a node's agent)
  // Under torchrun, without markers: the ranks of a task's processes in the order they were
  // signalled (a fallback: a process that prints nothing shifts the rest).
  std::map<int, std::vector<int>> ranks_of_task;
  // The processes the helper signalled, by pid: a marked dump is attributed by its pid.
  std::map<int, StepProcess> by_pid;
};

// Whether `file` is Python's or an installed package's rather than the program's own.
bool is_library_file(const std::string& file);

// Classifies one dump, the index-th of its task.
Process classify(const Dump& dump, const Layout& layout, std::size_t index = 0);

// Returns the one-line verdict, e.g. "rank 4 on node03 at train.py:57 in load_batch; ranks
// 0-3,5 wait in all_reduce at train.py:80". `silent` are ranks (or tasks, rank -1) that printed
// no stack, with their node when known: stuck where a signal cannot reach them (in the kernel,
// a dead device) or not Python.
std::string verdict(const std::vector<Process>& processes, const std::vector<Process>& silent,
                    const Layout& layout);

}  // namespace ddp::watch
