// crash_summary(): which ending came first and which followed from it.
#include <algorithm>

#include "ddp-watch/crash.hpp"
#include "libddp/util/text.hpp"

namespace ddp::watch {
namespace {

// One rank's (or task's) ending. The cause is written only for the first failure: a forged
// task list of 100,000 tasks costs an int and a pointer each, not a string.
struct Ending {
  int id = -1;    // rank, or task when a task is not a rank
  int task = -1;  // srun's task id, for the error it printed
  const TaskEnd* end = nullptr;
  const WorkerFailure* worker = nullptr;
  bool collateral = false;
  bool signalled = false;
};

std::string error_of(const CrashFacts& facts, int task) {
  for (const auto& [t, text] : facts.errors) {
    if (t == task) return text;
  }
  return "";
}

std::string killed_by(int signal) {
  return "killed by " + signal_name(signal) + " (signal " + std::to_string(signal) + ")";
}

// torchrun writes a worker killed by signal N as exit code -N; other negative codes are codes.
bool is_signal_code(int exit_code) {
  return exit_code < 0 && exit_code >= -255;
}

std::string cause_of(const Ending& e, const CrashFacts& facts) {
  if (e.worker != nullptr) {
    const WorkerFailure& w = *e.worker;
    if (!is_signal_code(w.exit_code)) return "exited with code " + std::to_string(w.exit_code);
    std::string cause = killed_by(-w.exit_code);
    if (w.exit_code == -9 && facts.oom_event) cause += ", the kernel's out-of-memory killer";
    return cause;
  }
  const TaskEnd& end = *e.end;
  std::string cause = end.oom || (end.signal == 9 && facts.oom_event)
                          ? "killed by the kernel's out-of-memory killer (SIGKILL)"
                      : end.signal != 0 ? killed_by(end.signal)
                                        : "exited with code " + std::to_string(end.exit_code);
  // What the task printed last is quoted: it is the program's text, not a fact.
  if (std::string error = error_of(facts, e.task); !error.empty()) {
    cause += ", its last error " + ddp::text::quote(error, 200);
  }
  return cause;
}

// One Ending per task, in the order srun reported them; those after srun or Slurm began to
// stop the step are collateral. A task's id is its rank unless Slurm's layout says otherwise
// (CrashFacts::rank_of_task).
std::vector<Ending> from_tasks(const CrashFacts& facts) {
  std::vector<Ending> out;
  for (const TaskEnd& end : facts.ends) {
    for (int task : end.tasks) {
      auto rank = facts.rank_of_task.find(task);
      const int id = rank == facts.rank_of_task.end() ? task : rank->second;
      out.push_back({id, task, &end, nullptr, end.after_stop, end.signal != 0});
    }
  }
  return out;
}

// torchrun's own table names ranks, hosts and the signal of each failed worker, in the order
// of its timestamps (whole seconds); within one second an agent's root cause comes before the
// workers it stopped itself (SIGTERM), whichever part of the table torch prints first.
std::vector<Ending> from_workers(const CrashFacts& facts) {
  std::vector<const WorkerFailure*> workers;
  for (const WorkerFailure& w : facts.workers) workers.push_back(&w);
  std::stable_sort(workers.begin(), workers.end(),
                   [](const WorkerFailure* a, const WorkerFailure* b) {
                     if (a->time != b->time) return a->time < b->time;
                     return a->root_cause && !b->root_cause;
                   });
  std::vector<Ending> out;
  for (const WorkerFailure* w : workers) {
    out.push_back({w->rank, -1, nullptr, w, false, is_signal_code(w->exit_code)});
  }
  return out;
}

std::string name(bool ranks, std::size_t count) {
  return std::string(ranks ? "rank" : "task") + (count == 1 ? " " : "s ");
}

// The first failure: the earliest ending not collateral that a signal caused, else the
// earliest not collateral, else the earliest.
std::vector<Ending>::const_iterator first_of(const std::vector<Ending>& endings) {
  auto first = std::find_if(endings.begin(), endings.end(),
                            [](const Ending& e) { return !e.collateral && e.signalled; });
  if (first == endings.end()) {
    first =
        std::find_if(endings.begin(), endings.end(), [](const Ending& e) { return !e.collateral; });
  }
  return first == endings.end() ? endings.begin() : first;
}

}  // namespace

std::string crash_summary(const CrashFacts& facts) {
  bool by_worker = !facts.task_is_rank && !facts.workers.empty();
  std::vector<Ending> endings = by_worker ? from_workers(facts) : from_tasks(facts);
  if (endings.empty()) return "";
  bool ranks = facts.task_is_rank || by_worker;
  auto first = first_of(endings);
  const std::string node = first->worker != nullptr ? first->worker->host : first->end->node;
  std::string out = "first failure: " + name(ranks, 1) + std::to_string(first->id) + " on " +
                    ddp::text::printable(node, 256) + ", " + cause_of(*first, facts);
  std::vector<int> others;
  for (const Ending& e : endings) {
    if (e.id != first->id) others.push_back(e.id);
  }
  // Under torchrun, ranks that torchrun did not list ended with their node's agent.
  if (!others.empty()) {
    out += "; collateral: " + name(ranks, others.size()) + format_ranges(others) +
           " (ended after it: lost a peer, or stopped by srun)";
  }
  return out;
}

}  // namespace ddp::watch
