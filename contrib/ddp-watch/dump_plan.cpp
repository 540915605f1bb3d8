#include "ddp-watch/dump_plan.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "libddp/util/text.hpp"

namespace ddp::watch {
namespace {

constexpr std::string_view k_prefix = "ddp-watch-dump: ";

using ByPid = std::map<pid_t, const StepProcess*>;

// Whether an ancestor of `p` (within the step) is in `among`.
bool has_ancestor_in(const StepProcess& p, const ByPid& by_pid, const std::set<pid_t>& among) {
  std::set<pid_t> seen;  // a pid table read while it changes may hold a loop
  for (auto it = by_pid.find(p.parent); it != by_pid.end() && seen.insert(it->first).second;
       it = by_pid.find(it->second->parent)) {
    if (among.contains(it->first)) return true;
  }
  return false;
}

// The rank's own processes: per group (RANK, or task without any RANK), the outermost Python
// process, or the outermost process when none is Python.
std::set<pid_t> mains_of(const std::vector<StepProcess>& processes, const ByPid& by_pid) {
  const bool any_rank = std::any_of(processes.begin(), processes.end(),
                                    [](const StepProcess& p) { return p.rank >= 0; });
  std::map<int, std::set<pid_t>> groups, pythons;
  for (const StepProcess& p : processes) {
    const int key = any_rank ? p.rank : p.task;
    if (key < 0) continue;
    groups[key].insert(p.pid);
    if (p.python) pythons[key].insert(p.pid);
  }
  std::set<pid_t> mains;
  for (const auto& [key, members] : groups) {
    const std::set<pid_t>& pick = pythons[key].empty() ? members : pythons[key];
    for (pid_t pid : pick) {
      if (!has_ancestor_in(*by_pid.at(pid), by_pid, pick)) mains.insert(pid);
    }
  }
  return mains;
}

// The nearest ancestor of `p` in the step that is a rank's process, or 0.
pid_t owner_of(const StepProcess& p, const ByPid& by_pid, const std::set<pid_t>& mains) {
  std::set<pid_t> seen;  // a pid table read while it changes may hold a loop
  for (auto it = by_pid.find(p.parent); it != by_pid.end() && seen.insert(it->first).second;
       it = by_pid.find(it->second->parent)) {
    if (mains.contains(it->first)) return it->first;
  }
  return 0;
}

bool by_rank(const StepProcess& a, const StepProcess& b) {
  if (a.rank != b.rank) return a.rank < b.rank;
  return a.pid < b.pid;
}

}  // namespace

DumpPlan plan_dump(const std::vector<StepProcess>& processes) {
  ByPid by_pid;
  for (const StepProcess& p : processes) by_pid[p.pid] = &p;
  const std::set<pid_t> mains = mains_of(processes, by_pid);
  DumpPlan plan;
  std::vector<StepProcess> launchers;
  for (StepProcess p : processes) {
    plan.stop.push_back(p);
    if (mains.contains(p.pid)) {
      p.role = Role::main;
      plan.dump.push_back(p);
    } else if (pid_t owner = owner_of(p, by_pid, mains); owner != 0) {
      p.role = Role::child;
      p.owner = owner;
      p.rank = by_pid[owner]->rank;
      plan.children.push_back(p);
    } else {
      p.role = Role::launcher;
      launchers.push_back(p);
    }
  }
  std::sort(plan.dump.begin(), plan.dump.end(), by_rank);
  std::sort(launchers.begin(), launchers.end(), by_rank);
  plan.dump.insert(plan.dump.end(), launchers.begin(), launchers.end());
  return plan;
}

std::string_view role_name(Role role) {
  return role == Role::main ? "main" : role == Role::child ? "child" : "launcher";
}

std::string dump_notice(const StepProcess& p) {
  return std::string(k_prefix) + "task " + std::to_string(p.task) + " rank " +
         std::to_string(p.rank) + " pid " + std::to_string(p.pid) + " node " +
         (p.node.empty() ? "?" : p.node) + " " + std::string(role_name(p.role));
}

bool parse_dump_notice(std::string_view line, StepProcess& out) {
  if (!line.starts_with(k_prefix)) return false;
  auto f = ddp::text::split(line.substr(k_prefix.size()), ' ');
  if (f.size() != 9 || f[0] != "task" || f[2] != "rank" || f[4] != "pid" || f[6] != "node") {
    return false;
  }
  auto task = ddp::text::parse_int(f[1]), rank = ddp::text::parse_int(f[3]),
       pid = ddp::text::parse_int(f[5]);
  if (!task || !rank || !pid || *pid <= 0 || f[7].empty()) return false;
  StepProcess p{*pid, 0, *task, *rank, f[7] == "?" ? "" : std::string(f[7]), false, Role::main, 0};
  if (f[8] == "launcher")
    p.role = Role::launcher;
  else if (f[8] != "main")
    return false;
  out = p;
  return true;
}

std::vector<pid_t> parse_listpids(std::string_view table, std::string_view job,
                                  std::string_view step) {
  std::vector<pid_t> out;
  bool header = false;
  for (std::string_view line : ddp::text::split(table, '\n')) {
    std::vector<std::string_view> f;
    for (std::string_view w : ddp::text::split(line, ' ')) {
      if (!w.empty()) f.push_back(w);
    }
    if (f.empty()) continue;
    // Lines before the header are scontrol's messages on stderr, read with the table.
    if (!header) {
      header = f.size() >= 3 && f[0] == "PID" && f[1] == "JOBID" && f[2] == "STEPID";
      continue;
    }
    if (f.size() < 3 || f[1] != job || f[2] != step) continue;
    auto pid = ddp::text::parse_int(f[0]);
    if (pid && *pid > 0) out.push_back(static_cast<pid_t>(*pid));
  }
  return out;
}

std::string dump_marker(pid_t pid) {
  return std::string(k_prefix) + "pid " + std::to_string(pid);
}

pid_t parse_dump_marker(std::string_view line) {
  constexpr std::string_view k_marker = "ddp-watch-dump: pid ";
  if (!line.starts_with(k_marker)) return 0;
  auto pid = ddp::text::parse_int(line.substr(k_marker.size()));
  return pid && *pid > 0 ? static_cast<pid_t>(*pid) : 0;
}

}  // namespace ddp::watch
