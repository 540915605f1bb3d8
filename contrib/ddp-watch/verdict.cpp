#include "ddp-watch/verdict.hpp"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>

#include "ddp-watch/output.hpp"
#include "libddp/core/hostlist.hpp"

namespace ddp::watch {
namespace {

// torch.distributed calls that block until every rank has joined them.
constexpr std::array<std::string_view, 27> k_collectives = {"all_reduce",
                                                            "all_gather",
                                                            "all_gather_into_tensor",
                                                            "_all_gather_base",
                                                            "all_gather_object",
                                                            "reduce_scatter",
                                                            "reduce_scatter_tensor",
                                                            "_reduce_scatter_base",
                                                            "broadcast",
                                                            "broadcast_object_list",
                                                            "barrier",
                                                            "monitored_barrier",
                                                            "reduce",
                                                            "gather",
                                                            "gather_object",
                                                            "scatter",
                                                            "scatter_object_list",
                                                            "all_to_all",
                                                            "all_to_all_single",
                                                            "send",
                                                            "recv",
                                                            "wait",
                                                            "init_process_group",
                                                            "_store_based_barrier",
                                                            "new_group",
                                                            "all_reduce_coalesced",
                                                            "all_gather_coalesced"};

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

std::string basename_of(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string describe(const Frame& f) {
  return basename_of(f.file) + ":" + std::to_string(f.line) + " in " + f.function;
}

// The collective a thread waits in, or "" when it is elsewhere. DDP's gradient all-reduce
// runs inside autograd's C++ engine, so a rank waiting for it shows only `backward`.
std::string collective_of(const Thread& t) {
  for (const Frame& f : t.frames) {
    if (contains(f.file, "torch/distributed/") &&
        std::find(k_collectives.begin(), k_collectives.end(), f.function) != k_collectives.end()) {
      return f.function;
    }
  }
  for (const Frame& f : t.frames) {
    if (contains(f.file, "torch/autograd/") && f.function == "backward") {
      return "backward (gradient all-reduce)";
    }
  }
  return "";
}

// A process a rank forked: a DataLoader worker or a multiprocessing child runs under
// multiprocessing's _bootstrap.
bool is_child(const Thread& t) {
  return std::any_of(t.frames.begin(), t.frames.end(), [](const Frame& f) {
    return contains(f.file, "torch/utils/data/_utils/worker.py") ||
           (contains(f.file, "multiprocessing/process.py") && f.function == "_bootstrap");
  });
}

bool is_launcher(const Thread& t) {
  return std::any_of(t.frames.begin(), t.frames.end(), [](const Frame& f) {
    return contains(f.file, "torch/distributed/elastic/agent/") ||
           contains(f.file, "torch/distributed/run.py");
  });
}

std::string node_of(const Process& p) {
  return p.node.empty() ? "an unknown node" : p.node;
}

}  // namespace

bool is_library_file(const std::string& file) {
  return file.starts_with("<") || contains(file, "/lib/python") || contains(file, "/torch/") ||
         contains(file, "/site-packages/") || contains(file, "/dist-packages/");
}

namespace {

// Rank, node and role of a dump: by the pid of its marker when the helper signalled it, else
// by its task (and, under torchrun, by its position among the task's dumps).
void attribute(Process& p, const Dump& dump, const Layout& layout, std::size_t index) {
  p.task = dump.task;
  p.rank = layout.task_is_rank ? dump.task : -1;
  if (auto it = layout.node_of_task.find(dump.task); it != layout.node_of_task.end()) {
    p.node = it->second;
  }
  if (auto it = layout.by_pid.find(dump.pid); dump.pid != 0 && it != layout.by_pid.end()) {
    const StepProcess& s = it->second;
    if (s.rank >= 0 || !layout.task_is_rank) p.rank = s.rank;
    if (!s.node.empty()) p.node = s.node;
    if (s.role == Role::launcher) p.state = State::launcher;
    return;
  }
  if (auto it = layout.ranks_of_task.find(dump.task);
      !layout.task_is_rank && it != layout.ranks_of_task.end() && index < it->second.size()) {
    p.rank = it->second[index];
  }
}

}  // namespace

Process classify(const Dump& dump, const Layout& layout, std::size_t index) {
  Process p;
  attribute(p, dump, layout, index);
  const Thread* t = main_thread(dump);
  if (t == nullptr || t->frames.empty()) return p;
  p.innermost = t->frames.front();
  auto own = std::find_if(t->frames.begin(), t->frames.end(),
                          [](const Frame& f) { return !is_library_file(f.file); });
  p.where = own != t->frames.end() ? *own : t->frames.front();
  if (p.state == State::launcher || is_launcher(*t)) {
    p.state = State::launcher;
  } else if (is_child(*t)) {
    p.state = State::child;
  } else if (std::string c = collective_of(*t); !c.empty()) {
    p.state = State::collective;
    p.collective = std::move(c);
  }
  return p;
}

namespace {

// "rank 4 on node07", "ranks 0-3,5 on node[01-03]"; processes whose rank is unknown are
// counted instead.
std::string who(const std::vector<const Process*>& group) {
  std::vector<int> ranks;
  std::set<std::string> nodes;
  std::size_t unknown = 0;
  for (const Process* p : group) {
    if (p->rank >= 0)
      ranks.push_back(p->rank);
    else
      ++unknown;
    nodes.insert(node_of(*p));
  }
  std::string out;
  if (!ranks.empty()) out = (ranks.size() == 1 ? "rank " : "ranks ") + format_ranges(ranks);
  if (unknown > 0) {
    if (!out.empty()) out += " and ";
    out += std::to_string(unknown) + (unknown == 1 ? " process" : " processes");
  }
  return out + " on " + format_hostlist(std::vector<std::string>(nodes.begin(), nodes.end()));
}

using Groups = std::map<std::string, std::vector<const Process*>>;

std::string join_groups(const Groups& groups, std::string_view between) {
  std::string out;
  for (const auto& [place, members] : groups) {
    if (!out.empty()) out += between;
    // One rank "waits", several "wait".
    bool one = members.size() == 1 && place.starts_with(" wait in ");
    out += who(members) + (one ? " waits in " + place.substr(9) : place);
  }
  return out;
}

// "rank 4 on node03 printed no stack (...)"; without ranks and nodes, "task 1 printed ...".
std::string silent_text(const std::vector<Process>& silent, const Layout& layout) {
  const std::string why = " printed no stack (stuck in the kernel or a device, or not Python)";
  const bool known = std::all_of(silent.begin(), silent.end(),
                                 [](const Process& p) { return p.rank >= 0 && !p.node.empty(); });
  if (known) {
    std::vector<const Process*> group;
    for (const Process& p : silent) group.push_back(&p);
    return who(group) + why;
  }
  std::vector<int> tasks;
  for (const Process& p : silent) tasks.push_back(p.rank >= 0 ? p.rank : p.task);
  return std::string(layout.task_is_rank ? (tasks.size() == 1 ? "rank " : "ranks ")
                                         : (tasks.size() == 1 ? "task " : "tasks ")) +
         format_ranges(tasks) + why;
}

}  // namespace

std::string verdict(const std::vector<Process>& processes, const std::vector<Process>& silent,
                    const Layout& layout) {
  Groups waiting, elsewhere;
  for (const Process& p : processes) {
    if (p.state == State::collective) {
      waiting[" wait in " + p.collective + " at " + describe(p.where)].push_back(&p);
    } else if (p.state == State::elsewhere) {
      std::string at = p.where.file.empty() ? " (no Python frame)" : " at " + describe(p.where);
      if (p.innermost.file != p.where.file || p.innermost.line != p.where.line) {
        at += " (innermost " + describe(p.innermost) + ")";
      }
      elsewhere[at].push_back(&p);
    }
  }
  std::string out;
  if (!silent.empty()) out = silent_text(silent, layout);
  if (!elsewhere.empty()) out += (out.empty() ? "" : "; ") + join_groups(elsewhere, "; ");
  if (!waiting.empty()) {
    if (elsewhere.empty() && silent.empty() && waiting.size() == 1) {
      return "every rank waits in the same place, " + join_groups(waiting, "") +
             ": no rank is elsewhere (suspect the network or a device)";
    }
    out += (out.empty() ? "" : "; ") + join_groups(waiting, "; ");
  }
  return out.empty() ? "no stack was printed (is PYTHONFAULTHANDLER=1 reaching the tasks?)" : out;
}

}  // namespace ddp::watch
