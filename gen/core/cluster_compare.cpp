// Where a site profile disagrees with the live cluster (cluster.hpp).
#include <algorithm>
#include <set>

#include "gen/core/cluster.hpp"
#include "gen/core/duration.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen {
namespace {

struct Report {
  std::vector<LiveFinding> findings;
  void conflict(const std::string& where, const std::string& message) {
    findings.push_back({true, where, message});
  }
  void note(const std::string& where, const std::string& message) {
    findings.push_back({false, where, message});
  }
};

std::string time_text(long seconds) {
  return seconds > 0 ? duration::format(seconds) : "UNLIMITED";
}

// Nodes satisfying constraint: every feature named in an '&' expression. Alternatives ('|',
// counts, brackets) are not evaluated: every node qualifies.
std::vector<const ClusterNode*> matching(const std::vector<const ClusterNode*>& nodes,
                                         const std::string& constraint) {
  if (constraint.empty() || constraint.find_first_of("|[*") != std::string::npos) return nodes;
  std::vector<std::string> wanted;
  for (std::size_t start = 0;;) {
    const auto amp = constraint.find('&', start);
    wanted.push_back(constraint.substr(start, amp - start));
    if (amp == std::string::npos) break;
    start = amp + 1;
  }
  std::vector<const ClusterNode*> out;
  for (const auto* n : nodes)
    if (std::ranges::all_of(wanted, [&](const auto& f) {
          return std::ranges::find(n->features, f) != n->features.end();
        }))
      out.push_back(n);
  return out;
}

void compare_limits(Report& r, const std::string& where, const Partition& p,
                    const ClusterPartition& c, long node_count) {
  if (c.max_nodes > 0 && (p.max_nodes == 0 || p.max_nodes > c.max_nodes))
    r.conflict(where, "max_nodes " + (p.max_nodes ? std::to_string(p.max_nodes) : "unset") +
                          " in the profile, MaxNodes=" + std::to_string(c.max_nodes) +
                          " on the cluster");
  else if (p.max_nodes > 0 && c.max_nodes > 0 && p.max_nodes < c.max_nodes)
    r.note(where, "max_nodes " + std::to_string(p.max_nodes) + " is stricter than MaxNodes=" +
                      std::to_string(c.max_nodes) + " (fine if a QOS enforces it)");
  if (p.max_nodes > node_count)
    r.note(where, "max_nodes " + std::to_string(p.max_nodes) + ", but the partition has " +
                      std::to_string(node_count) + " node(s) here");
  if (c.max_time > 0 && (p.max_time == 0 || p.max_time > c.max_time))
    r.conflict(where, "max_time " + (p.max_time ? duration::format(p.max_time) : "unset") +
                          " in the profile, MaxTime=" + time_text(c.max_time) + " on the cluster");
  else if (p.max_time > 0 && p.max_time < c.max_time)
    r.note(where, "max_time " + duration::format(p.max_time) +
                      " is stricter than MaxTime=" + time_text(c.max_time));
  else if (p.max_time > 0 && c.max_time == 0)
    r.note(where, "max_time " + duration::format(p.max_time) +
                      " in the profile; the cluster has no limit (MaxTime=UNLIMITED)");
}

void compare_nodes(Report& r, const std::string& where, const Profile& profile, const Partition& p,
                   const std::vector<const ClusterNode*>& nodes) {
  const NodeSpec& spec = p.node ? *p.node : profile.node;
  const auto chosen = matching(nodes, p.constraint);
  if (chosen.empty() && !nodes.empty()) {
    r.conflict(where, "constraint " + ddp::text::quote(p.constraint) +
                          " matches no node of the partition");
    return;
  }
  long most_gpus = 0, most_cpus = 0;
  std::set<std::string> types;
  for (const auto* n : chosen) {
    most_gpus = std::max(most_gpus, n->gpus());
    most_cpus = std::max(most_cpus, n->cpus);
    for (const auto& g : n->gres)
      if (g.name == "gpu" && !g.type.empty()) types.insert(g.type);
  }
  if (spec.gpus > most_gpus)
    r.conflict(where, "node.gpus " + std::to_string(spec.gpus) +
                          " in the profile; the nodes have at most " + std::to_string(most_gpus));
  else if (spec.gpus < most_gpus)
    r.note(where, "node.gpus " + std::to_string(spec.gpus) + "; the nodes have " +
                      std::to_string(most_gpus));
  if (profile.gpu_request == "gres" && !spec.gpu_type.empty() && spec.gpus > 0 &&
      !types.contains(spec.gpu_type)) {
    std::string have;
    for (const auto& t : types) have += (have.empty() ? "" : ", ") + t;
    r.conflict(where, "gpu_type " + ddp::text::quote(spec.gpu_type) +
                          " is no GPU GRES type of the nodes (" +
                          (have.empty() ? "untyped gpu" : "have: " + have) + ")");
  }
  if (spec.cores > most_cpus)
    r.conflict(where, "node.cores " + std::to_string(spec.cores) +
                          " in the profile; the nodes have at most " + std::to_string(most_cpus) +
                          " CPUs");
}

}  // namespace

std::vector<LiveFinding> compare_with_cluster(const Profile& profile, const ClusterFacts& facts) {
  Report r;
  if (profile.ddp_plugin && !facts.ddp_plugin)
    r.conflict("ddp_plugin", "true in the profile, but srun here has no --ddp option");
  if (!profile.ddp_plugin && facts.ddp_plugin)
    r.note("ddp_plugin", "false in the profile, but srun here offers --ddp");
  std::set<std::string> named;
  for (std::size_t i = 0; i < profile.partitions.size(); ++i) {
    const Partition& p = profile.partitions[i];
    const std::string where = "partitions[" + std::to_string(i) + "] (" + p.name + ")";
    named.insert(p.name);
    auto c = std::ranges::find(facts.partitions, p.name, &ClusterPartition::name);
    if (c == facts.partitions.end()) {
      std::string have;
      for (const auto& cp : facts.partitions) have += (have.empty() ? "" : ", ") + cp.name;
      r.conflict(where, "no such partition on this cluster (have: " + have + ")");
      continue;
    }
    const auto nodes = facts.nodes_of(p.name);
    compare_limits(r, where, p, *c, static_cast<long>(nodes.size()));
    compare_nodes(r, where, profile, p, nodes);
  }
  for (const auto& c : facts.partitions)
    if (!named.contains(c.name))
      r.note("partitions",
             "the cluster's partition " + ddp::text::quote(c.name) + " is not in the profile");
  std::ranges::stable_partition(r.findings, [](const auto& f) { return f.conflict; });
  return r.findings;
}

}  // namespace ddpgen
