#include "ddp-watch/dump_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

namespace ddp::watch {

DumpPlan plan_dump(const std::vector<StepProcess>& processes) {
  std::set<pid_t> pids, parents;
  for (const StepProcess& p : processes) pids.insert(p.pid);
  for (const StepProcess& p : processes) {
    if (pids.contains(p.parent)) parents.insert(p.parent);
  }
  DumpPlan plan;
  std::vector<StepProcess> leaves;
  for (const StepProcess& p : processes) {
    (parents.contains(p.pid) ? plan.stop : leaves).push_back(p);
  }
  auto by_rank = [](const StepProcess& a, const StepProcess& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.pid < b.pid;
  };
  std::sort(leaves.begin(), leaves.end(), by_rank);
  std::sort(plan.stop.begin(), plan.stop.end(), by_rank);
  plan.dump = leaves;
  plan.dump.insert(plan.dump.end(), plan.stop.begin(), plan.stop.end());
  return plan;
}

std::string dump_notice(const StepProcess& p) {
  return "ddp-watch-dump: task " + std::to_string(p.task) + " rank " + std::to_string(p.rank) +
         " pid " + std::to_string(p.pid);
}

bool parse_dump_notice(const std::string& line, StepProcess& out) {
  int task = -1, rank = -1, pid = 0, used = 0;
  if (std::sscanf(line.c_str(), "ddp-watch-dump: task %d rank %d pid %d%n", &task, &rank, &pid,
                  &used) != 3 ||
      static_cast<std::size_t>(used) != line.size()) {
    return false;
  }
  out = StepProcess{pid, 0, task, rank};
  return true;
}

}  // namespace ddp::watch
