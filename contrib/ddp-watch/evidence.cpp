// From the stall's processes and the crash's facts to the suspected nodes.
#include "ddp-watch/evidence.hpp"

#include <csignal>
#include <map>
#include <set>

#include "ddp-watch/trust.hpp"
#include "libddp/core/hostlist.hpp"
#include "libddp/util/text.hpp"

namespace ddp::watch {
namespace {

std::string place(const Frame& f) {
  const std::size_t slash = f.file.rfind('/');
  const std::string base = slash == std::string::npos ? f.file : f.file.substr(slash + 1);
  return base.empty() ? "no Python frame"
                      : base + ":" + std::to_string(f.line) + " in " + f.function;
}

std::string numbered(const char* one, const char* many, const std::vector<std::int64_t>& ids) {
  return text::noun(ids.size(), one, many) + " " + text::format_ranges(ids);
}

void add(std::vector<Suspect>& out, Suspect s) {
  for (const Suspect& o : out) {
    if (o.node == s.node) return;
  }
  out.push_back(std::move(s));
}

}  // namespace

std::vector<Suspect> stall_suspects(const std::vector<Process>& processes,
                                    const std::vector<int>& silent, const Layout& layout) {
  std::vector<std::int64_t> waiting;
  std::set<std::string> collectives;
  for (const Process& p : processes) {
    if (p.state != State::collective) continue;
    waiting.push_back(p.rank >= 0 ? p.rank : p.task);
    collectives.insert(p.collective);
  }
  std::vector<Suspect> out;
  if (waiting.empty()) return out;
  const std::string others = " while " + numbered("rank", "ranks", waiting) + " waited in " +
                             text::join({collectives.begin(), collectives.end()}, ", ");
  // Grouped by node and place, so that one line tells each node's ranks.
  std::map<std::pair<std::string, std::string>, std::vector<std::int64_t>> elsewhere;
  for (const Process& p : processes) {
    if (p.state == State::elsewhere && !p.node.empty()) {
      elsewhere[{p.node, place(p.where)}].push_back(p.rank >= 0 ? p.rank : p.task);
    }
  }
  for (const auto& [key, ranks] : elsewhere) {
    add(out, {key.first, Fault::hang,
              numbered("rank", "ranks", ranks) + " at " + key.second + others, key.second});
  }
  for (int task : silent) {
    auto it = layout.node_of_task.find(task);
    if (it == layout.node_of_task.end()) continue;
    add(out, {it->second, Fault::hang,
              numbered(layout.task_is_rank ? "rank" : "task",
                       layout.task_is_rank ? "ranks" : "tasks", {task}) +
                  " printed no stack (stuck in the kernel or a device)" + others,
              ""});
  }
  return out;
}

std::vector<Suspect> crash_suspects(const CrashFacts& facts) {
  std::vector<Suspect> out;
  for (const TaskEnd& end : facts.ends) {
    if (end.signal != SIGBUS || end.after_stop || end.node.empty()) continue;
    std::vector<std::int64_t> tasks(end.tasks.begin(), end.tasks.end());
    add(out, {end.node, Fault::hardware_signal,
              numbered("task", "tasks", tasks) + " died of SIGBUS (srun: " + end.how + ")", ""});
  }
  return out;
}

std::vector<Suspect> srun_suspects(std::string_view text, std::string* note) {
  if (!text.starts_with("srun: error: ")) return {};
  const std::string evidence = "srun: " + std::string(text::trim(text.substr(13)));
  constexpr std::string_view k_launch = " failed on node ";
  if (text.find("Task launch for ") != std::string_view::npos) {
    const std::size_t at = text.find(k_launch);
    if (at == std::string_view::npos) return {};
    std::string_view node = text.substr(at + k_launch.size());
    node = node.substr(0, node.find(':'));
    if (!is_node_name(node)) return {};
    return {{std::string(node), Fault::unreachable, evidence, ""}};
  }
  constexpr std::string_view k_marker = "Node failure on ";
  const std::size_t at = text.find(k_marker);
  if (at == std::string_view::npos) return {};
  std::string_view list = text::trim(text.substr(at + k_marker.size()));
  list = list.substr(0, list.find(' '));
  // Counted before it is expanded: a list longer than k_max_named is not read.
  auto count = Hostlist::count(list);
  if (!count) return {};
  if (*count > k_max_named) {
    if (note != nullptr) {
      *note = "srun named " + std::to_string(*count) + " nodes in one line, more than " +
              std::to_string(k_max_named) + ": not read as evidence";
    }
    return {};
  }
  auto hosts = Hostlist::parse(list);
  if (!hosts) return {};
  std::vector<Suspect> out;
  for (const std::string& node : hosts->expand())
    add(out, {node, Fault::node_failure, evidence, ""});
  return out;
}

}  // namespace ddp::watch
