// crash_summary(): which ending came first and which followed from it.
#include <algorithm>

#include "ddp-watch/crash.hpp"

namespace ddp::watch {
namespace {

struct Ending {
  int id = -1;  // rank, or task when a task is not a rank
  std::string node;
  std::string cause;
  bool collateral = false;
};

std::string error_of(const CrashFacts& facts, int task) {
  for (const auto& [t, text] : facts.errors) {
    if (t == task) return text;
  }
  return "";
}

std::string cause_of(const TaskEnd& end, const CrashFacts& facts) {
  if (end.oom || (end.signal == 9 && facts.oom_event)) {
    return "killed by the kernel's out-of-memory killer (SIGKILL)";
  }
  if (end.signal != 0) {
    return "killed by " + signal_name(end.signal) + " (signal " + std::to_string(end.signal) + ")";
  }
  return "exited with code " + std::to_string(end.exit_code);
}

// One Ending per task, in the order srun reported them.
std::vector<Ending> from_tasks(const CrashFacts& facts) {
  std::vector<Ending> out;
  for (const TaskEnd& end : facts.ends) {
    for (int task : end.tasks) {
      Ending e{task, end.node, cause_of(end, facts), end.after_stop};
      std::string error = error_of(facts, task);
      if (!error.empty()) {
        e.collateral = e.collateral || is_peer_error(error);
        e.cause += ": " + error;
      }
      // A task that srun or Slurm ended (SIGTERM, or SIGKILL after the step was stopped)
      // died of the stop, not of its own fault.
      out.push_back(std::move(e));
    }
  }
  return out;
}

// torchrun's own table names ranks, hosts and the signal of each failed worker; the one killed
// by a signal, else the earliest, is the first failure.
std::vector<Ending> from_workers(const CrashFacts& facts) {
  std::vector<WorkerFailure> workers = facts.workers;
  std::stable_sort(workers.begin(), workers.end(), [](const auto& a, const auto& b) {
    if ((a.exit_code < 0) != (b.exit_code < 0)) return a.exit_code < 0;
    return a.time < b.time;
  });
  std::vector<Ending> out;
  for (const WorkerFailure& w : workers) {
    Ending e{w.rank, w.host, "", !out.empty()};
    int sig = -w.exit_code;
    e.cause = w.exit_code < 0
                  ? "killed by " + signal_name(sig) + " (signal " + std::to_string(sig) + ")"
                  : "exited with code " + std::to_string(w.exit_code);
    if (w.exit_code == -9 && facts.oom_event) e.cause += ", the kernel's out-of-memory killer";
    out.push_back(std::move(e));
  }
  return out;
}

std::string name(bool ranks, std::size_t count) {
  return std::string(ranks ? "rank" : "task") + (count == 1 ? " " : "s ");
}

}  // namespace

std::string crash_summary(const CrashFacts& facts) {
  bool by_worker = !facts.task_is_rank && !facts.workers.empty();
  std::vector<Ending> endings = by_worker ? from_workers(facts) : from_tasks(facts);
  if (endings.empty()) return "";
  bool ranks = facts.task_is_rank || by_worker;
  auto first =
      std::find_if(endings.begin(), endings.end(), [](const Ending& e) { return !e.collateral; });
  if (first == endings.end()) first = endings.begin();
  std::string out = "first failure: " + name(ranks, 1) + std::to_string(first->id) + " on " +
                    first->node + ", " + first->cause;
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
