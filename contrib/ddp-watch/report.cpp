#include "ddp-watch/report.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "ddp-watch/evidence.hpp"
#include "ddp-watch/verdict.hpp"

namespace ddp::watch {
namespace {

Layout layout_of(const CrashFacts& facts, const std::vector<StepProcess>& notices) {
  Layout layout;
  for (const StepProcess& n : notices) {
    layout.ranks_of_task[n.task].push_back(n.rank);
    layout.by_pid[n.pid] = n;
  }
  layout.task_is_rank = facts.task_is_rank;
  for (const TaskEnd& end : facts.ends) {
    for (int task : end.tasks) layout.node_of_task[task] = end.node;
  }
  return layout;
}

std::string stacks_text(const std::vector<Dump>& dumps, const std::vector<Process>& processes,
                        const std::string& verdict_line) {
  std::string out = "ddp-watch: verdict: " + verdict_line + "\n";
  for (std::size_t i = 0; i < dumps.size(); ++i) {
    const Process& p = processes[i];
    out += "\n=== task " + std::to_string(p.task);
    if (p.rank >= 0) out += ", rank " + std::to_string(p.rank);
    if (!p.node.empty()) out += ", node " + p.node;
    out += p.state == State::collective ? ", waits in " + p.collective
           : p.state == State::launcher ? ", launcher"
           : p.state == State::child    ? ", a child process of the rank"
                                        : ", elsewhere";
    out += " ===\n";
    for (const std::string& line : dumps[i].text) out += line + "\n";
  }
  return out;
}

// The ranks that printed no stack. With the helper's notices and markers: each rank's process
// it signalled whose marker no dump followed, with its node. Without: each task seen that
// printed none.
std::vector<Process> silent_ranks(const std::vector<Dump>& dumps, const Layout& layout,
                                  const std::vector<int>& tasks,
                                  const std::vector<StepProcess>& notices) {
  std::vector<Process> silent;
  std::set<int> dumped_pids, dumped_tasks;
  for (const Dump& d : dumps) {
    dumped_pids.insert(d.pid);
    dumped_tasks.insert(d.task);
  }
  const bool marked = std::any_of(dumps.begin(), dumps.end(), [](const Dump& d) { return d.pid; });
  if (!notices.empty() && marked) {
    for (const StepProcess& n : notices) {
      if (n.role != Role::main || dumped_pids.contains(n.pid)) continue;
      const int rank = n.rank >= 0 || !layout.task_is_rank ? n.rank : n.task;
      silent.push_back(Process{n.task, rank, n.node, State::elsewhere, "", {}, {}});
    }
    return silent;
  }
  std::set<int> known(tasks.begin(), tasks.end());
  for (const auto& [task, node] : layout.node_of_task) known.insert(task);
  for (int t : known) {
    if (t < 0 || dumped_tasks.contains(t)) continue;
    auto node = layout.node_of_task.find(t);
    silent.push_back(Process{t,
                             layout.task_is_rank ? t : -1,
                             node == layout.node_of_task.end() ? "" : node->second,
                             State::elsewhere,
                             "",
                             {},
                             {}});
  }
  return silent;
}

}  // namespace

StallReport stall_report(const std::vector<Line>& captured, const CrashFacts& facts,
                         const std::vector<int>& tasks, const std::vector<StepProcess>& notices) {
  std::vector<Dump> dumps = parse_dumps(captured);
  // Order by task so the stacks file reads rank by rank; a task's own dumps keep their order.
  std::stable_sort(dumps.begin(), dumps.end(),
                   [](const Dump& a, const Dump& b) { return a.task < b.task; });
  Layout layout = layout_of(facts, notices);
  std::vector<Process> processes;
  std::map<int, std::size_t> seen;  // dumps of each task so far
  for (const Dump& d : dumps) processes.push_back(classify(d, layout, seen[d.task]++));
  StallReport r;
  const std::vector<Process> silent = silent_ranks(dumps, layout, tasks, notices);
  r.verdict = verdict(processes, silent, layout);
  r.stacks = stacks_text(dumps, processes, r.verdict);
  r.dumps = dumps.size();
  std::vector<int> silent_tasks;
  for (const Process& p : silent) silent_tasks.push_back(p.task);
  r.suspects = stall_suspects(processes, silent_tasks, layout);
  return r;
}

}  // namespace ddp::watch
