// The respawn decision: which nodes a new step runs on, or why the heal path takes over.
#include "ddp-watch/respawn.hpp"

#include <algorithm>
#include <cstdio>

#include "libddp/core/hostlist.hpp"
#include "libddp/util/text.hpp"

namespace ddp::watch {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The suspects on the step's nodes, one per node (the first evidence wins).
std::vector<Suspect> on_step(const std::vector<std::string>& step,
                             const std::vector<Suspect>& suspects) {
  std::vector<Suspect> out;
  for (const Suspect& s : suspects) {
    if (!contains(step, s.node)) continue;
    if (std::any_of(out.begin(), out.end(), [&](const Suspect& o) { return o.node == s.node; }))
      continue;
    out.push_back(s);
  }
  return out;
}

// Every node named so far, then this step's, for the heal path's exclusions.
std::vector<Suspect> all_named(const RespawnState& state, const std::vector<Suspect>& now) {
  std::vector<Suspect> out;
  for (const RespawnDone& d : state.done) out.insert(out.end(), d.named.begin(), d.named.end());
  out.insert(out.end(), now.begin(), now.end());
  return out;
}

std::string head(const Suspect& s) {
  return s.node + " (" + std::string(fault_name(s.fault)) + ")";
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

// "respawn 1 of at most 1: node02 (hardware-signal): EVIDENCE; node[01-03] -> node[01,03-04]".
std::string moved(const RespawnDone& done, std::size_t number, unsigned max_respawns) {
  std::vector<std::string> named;
  for (const Suspect& s : done.named) named.push_back(head(s) + ": " + s.evidence);
  return "respawn " + std::to_string(number) + " of at most " + std::to_string(max_respawns) +
         (done.first ? " before the first step" : "") + ": " + text::join(named, "; ") + "; " +
         format_hostlist(done.from) + " -> " + format_hostlist(done.to);
}

// The earlier suspect whose fault came back on another node, and the new one; "" when none.
std::string followed(const RespawnState& state, const std::vector<Suspect>& now) {
  for (const Suspect& s : now) {
    for (const RespawnDone& d : state.done) {
      // What the check of every node found before the first step is a node's, found by the
      // check, not the program: another node's fault of that kind is not this one following.
      if (d.first) continue;
      for (const Suspect& e : d.named) {
        if (e.node == s.node || e.fault != s.fault || e.signature != s.signature) continue;
        return std::string(fault_name(s.fault)) +
               (s.signature.empty() ? "" : " at " + s.signature) + " on " + s.node + " as on " +
               e.node + " before the respawn";
      }
    }
  }
  return "";
}

}  // namespace

std::optional<std::vector<std::string>> choose_nodes(const std::vector<std::string>& allocation,
                                                     std::size_t count,
                                                     const std::vector<std::string>& avoid) {
  std::vector<std::string> out;
  for (const std::string& node : allocation) {
    if (out.size() == count) break;
    if (!contains(avoid, node) && !contains(out, node)) out.push_back(node);
  }
  if (out.size() < count) return std::nullopt;
  return out;
}

std::optional<std::vector<std::string>> first_step_nodes(const std::vector<std::string>& allocation,
                                                         unsigned spares, std::string& why) {
  if (allocation.size() <= spares) {
    why = "the job has " + text::plural(allocation.size(), "node") + ", not more than " +
          std::to_string(spares) + " spare(s) (--spares " + std::to_string(spares) + ")";
    return std::nullopt;
  }
  return choose_nodes(allocation, allocation.size() - spares, {});
}

RespawnDecision decide_first_step(const std::vector<std::string>& allocation, unsigned spares,
                                  bool failed, const std::vector<Suspect>& suspects,
                                  unsigned max_respawns) {
  RespawnDecision d;
  if (!failed) return d;
  d.named = on_step(allocation, suspects);
  d.action = RespawnAction::fall_back;
  if (d.named.empty()) {
    d.why = "the check of every node named none";
    return d;
  }
  if (d.named.size() > spares) {
    d.why = "the check named " + text::plural(d.named.size(), "node") + ", more than the " +
            std::to_string(spares) + " spare(s)";
    return d;
  }
  if (max_respawns == 0) {
    d.why = "no respawn allowed (heal.max_respawns: 0)";
    return d;
  }
  std::vector<std::string> avoid;
  for (const Suspect& s : d.named) avoid.push_back(s.node);
  auto nodes = choose_nodes(allocation, allocation.size() - spares, avoid);
  if (!nodes) {  // not reached: at most `spares` nodes are avoided
    d.why = "no spare node left";
    return d;
  }
  d.action = RespawnAction::respawn;
  d.nodes = std::move(*nodes);
  return d;
}

RespawnDecision decide_respawn(const RespawnState& state, bool failed,
                               const std::vector<Suspect>& suspects, unsigned max_respawns) {
  RespawnDecision d;
  if (!failed) return d;
  const std::vector<Suspect> now = on_step(state.step, suspects);
  d.named = all_named(state, now);
  d.action = RespawnAction::fall_back;
  if (now.empty()) {
    d.why = "no node of the step was named";
    return d;
  }
  if (now.size() >= state.step.size()) {
    d.why = "every node of the step was named";
    return d;
  }
  if (const std::string why = followed(state, now); !why.empty()) {
    d.action = RespawnAction::fail;
    d.why = "the fault follows the job: " + why +
            "; it is the program's or its input's, not a node's: not respawning, not requeueing";
    return d;
  }
  if (state.done.size() >= max_respawns) {
    d.why = "respawned " + std::to_string(state.done.size()) + " time(s), the cap (" +
            "heal.max_respawns: " + std::to_string(max_respawns) + ")";
    return d;
  }
  std::vector<std::string> avoid;
  for (const Suspect& s : d.named) avoid.push_back(s.node);
  // The step's healthy nodes first, in their order, then the spares in the allocation's.
  std::vector<std::string> order;
  for (const std::string& n : state.step) order.push_back(n);
  for (const std::string& n : state.allocation) order.push_back(n);
  auto nodes = choose_nodes(order, state.step.size(), avoid);
  if (!nodes) {
    d.why = "no spare node left (" + format_hostlist(avoid) + " named of " +
            format_hostlist(state.allocation) + ")";
    return d;
  }
  std::sort(nodes->begin(), nodes->end(), [&](const std::string& a, const std::string& b) {
    return std::find(state.allocation.begin(), state.allocation.end(), a) <
           std::find(state.allocation.begin(), state.allocation.end(), b);
  });
  d.action = RespawnAction::respawn;
  d.nodes = std::move(*nodes);
  d.named = now;
  return d;
}

std::string respawn_line(const RespawnDone& done, std::size_t number, unsigned max_respawns) {
  return moved(done, number, max_respawns) +
         (done.first ? "; the first step started " + seconds_text(done.seconds) +
                           " after the check of every node ended"
                     : "; the new step started " + seconds_text(done.seconds) +
                           " after the failed one's srun exited") +
         (done.check == RespawnCheck::passed ? ", its nodes checked in between" : "");
}

std::string check_failed_line(const RespawnDone& done, std::size_t number, unsigned max_respawns,
                              const RespawnDecision& next) {
  std::string then;
  switch (next.action) {
    case RespawnAction::respawn:
      then = "respawning again";
      break;
    case RespawnAction::none:
    case RespawnAction::fall_back:
      then = "not respawning: " + next.why + "; the heal path takes over";
      break;
    case RespawnAction::fail:
      then = next.why;
      break;
  }
  return moved(done, number, max_respawns) + ": the check of " + format_hostlist(done.to) +
         " failed, no step started there; " + then;
}

std::vector<std::string> check_command(const Options& options,
                                       const std::vector<std::string>& nodes) {
  const std::size_t per_node =
      options.check_tasks_per_node > 0 ? static_cast<std::size_t>(options.check_tasks_per_node) : 1;
  std::vector<std::string> command = {options.command.front(),
                                      "--nodelist=" + format_hostlist(nodes),
                                      "--nodes=" + std::to_string(nodes.size()),
                                      "--ntasks=" + std::to_string(nodes.size() * per_node),
                                      "--ntasks-per-node=" + std::to_string(per_node),
                                      "--kill-on-bad-exit=1"};
  const std::vector<std::string> setup = check_setup(options);
  command.insert(command.end(), setup.begin(), setup.end());
  command.insert(command.end(), options.respawn_check.begin(), options.respawn_check.end());
  return command;
}

std::string respawn_summary(const std::vector<RespawnDone>& done) {
  if (done.empty()) return "respawns: none";
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < done.size(); ++i) {
    std::vector<std::string> named;
    for (const Suspect& s : done[i].named) named.push_back(head(s));
    parts.push_back(std::to_string(i + 1) + (done[i].first ? " (before the first step)" : "") +
                    ": " + text::join(named, ", ") + " " + format_hostlist(done[i].from) + " -> " +
                    format_hostlist(done[i].to) + " " +
                    (done[i].check == RespawnCheck::failed
                         ? std::string("check failed, not started")
                         : "started after " + seconds_text(done[i].seconds)));
  }
  return "respawns: " + text::join(parts, "; ");
}

}  // namespace ddp::watch
