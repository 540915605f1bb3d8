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
  for (const StepProcess& n : notices) layout.ranks_of_task[n.task].push_back(n.rank);
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
                                        : ", elsewhere";
    out += " ===\n";
    for (const std::string& line : dumps[i].text) out += line + "\n";
  }
  return out;
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
  std::set<int> dumped;
  std::map<int, std::size_t> seen;  // dumps of each task so far
  for (const Dump& d : dumps) {
    processes.push_back(classify(d, layout, seen[d.task]++));
    dumped.insert(d.task);
  }
  std::set<int> known(tasks.begin(), tasks.end());
  for (const auto& [task, node] : layout.node_of_task) known.insert(task);
  std::vector<int> silent;
  for (int t : known) {
    if (t >= 0 && !dumped.contains(t)) silent.push_back(t);
  }
  StallReport r;
  r.verdict = verdict(processes, silent, layout);
  r.stacks = stacks_text(dumps, processes, r.verdict);
  r.dumps = dumps.size();
  r.suspects = stall_suspects(processes, silent, layout);
  return r;
}

}  // namespace ddp::watch
