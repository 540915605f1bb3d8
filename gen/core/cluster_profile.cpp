// Draft profiles from a live cluster, and a profile's differences from one (cluster.hpp).
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "gen/core/cluster.hpp"
#include "gen/core/duration.hpp"

namespace ddpgen {
namespace {

// What a profile's node entry can say about a node. Nodes that differ only in memory are one
// type (a job cannot choose between them); the type reports the smallest memory.
struct NodeType {
  long gpus = 0;
  std::string gpu_type;
  long cores = 0;
  auto operator<=>(const NodeType&) const = default;
};

struct TypeCount {
  long nodes = 0;
  long memory_gb = 0;
};

NodeType type_of(const ClusterNode& n) {
  return {n.gpus(), n.gpu_type(), n.cpus};
}

std::map<NodeType, TypeCount> count_types(const std::vector<const ClusterNode*>& nodes) {
  std::map<NodeType, TypeCount> count;
  for (const auto* n : nodes) {
    auto [it, added] = count.try_emplace(type_of(*n), TypeCount{0, n->memory_mb / 1024});
    it->second.memory_gb = std::min(it->second.memory_gb, n->memory_mb / 1024);
    ++it->second.nodes;
  }
  return count;
}

// The most common node type among GPU nodes (all nodes when there are none): the profile's
// default node, so that partition entries only say where they differ.
std::pair<NodeType, TypeCount> common_type(const ClusterFacts& facts) {
  const bool any_gpu = std::ranges::any_of(facts.nodes, [](const auto& n) { return n.gpus() > 0; });
  std::vector<const ClusterNode*> nodes;
  for (const auto& n : facts.nodes)
    if (!any_gpu || n.gpus() > 0) nodes.push_back(&n);
  std::pair<NodeType, TypeCount> best;
  for (const auto& entry : count_types(nodes))
    if (entry.second.nodes > best.second.nodes) best = entry;
  return best;
}

std::string node_yaml(const NodeType& t, const TypeCount& c) {
  std::string out = "{gpus: " + std::to_string(t.gpus);
  if (!t.gpu_type.empty()) out += ", gpu_type: " + t.gpu_type;
  return out + ", cores: " + std::to_string(t.cores) +
         ", memory_gb: " + std::to_string(c.memory_gb) + "}";
}

// A feature every node of type has and no other node of the partition has, to tell the type
// apart with --constraint; "" when there is none.
std::string distinguishing_feature(const std::vector<const ClusterNode*>& nodes,
                                   const NodeType& type) {
  std::set<std::string> candidates;
  bool first = true;
  for (const auto* n : nodes) {
    if (type_of(*n) != type) continue;
    std::set<std::string> mine(n->features.begin(), n->features.end());
    if (first) candidates = mine, first = false;
    std::erase_if(candidates, [&](const auto& f) { return !mine.contains(f); });
  }
  for (const auto* n : nodes)
    if (type_of(*n) != type)
      for (const auto& f : n->features) candidates.erase(f);
  if (candidates.contains(type.gpu_type)) return type.gpu_type;  // "a100" reads best
  return candidates.empty() ? "" : *candidates.begin();
}

void draft_partition(std::ostream& out, const ClusterFacts& facts, const ClusterPartition& p,
                     const NodeType& common) {
  const auto nodes = facts.nodes_of(p.name);
  auto counted = count_types(nodes);
  if (counted.empty()) counted[common] = {};
  // The common type first, then by number of nodes: ddpgen picks the first entry that fits.
  std::vector<std::pair<NodeType, TypeCount>> types(counted.begin(), counted.end());
  std::ranges::stable_sort(types, [&](const auto& a, const auto& b) {
    return std::pair(a.first != common, -a.second.nodes) <
           std::pair(b.first != common, -b.second.nodes);
  });
  for (const auto& [type, tc] : types) {
    const long count = tc.nodes;
    out << "  - name: " << p.name << "\n";
    out << "    description: " << count << " node" << (count == 1 ? "" : "s")
        << (p.is_default ? ", the default partition" : "") << "\n";
    const long max_nodes = p.max_nodes > 0 ? std::min(p.max_nodes, count) : count;
    if (max_nodes > 0) out << "    max_nodes: " << max_nodes << "\n";
    if (p.min_nodes > 1) out << "    min_nodes: " << p.min_nodes << "\n";
    if (p.max_time > 0) out << "    max_time: \"" << duration::format(p.max_time) << "\"\n";
    if (types.size() > 1) {
      const std::string feature = distinguishing_feature(nodes, type);
      if (feature.empty())
        out << "    # several node types share this partition and no feature tells this one "
               "apart\n";
      else
        out << "    constraint: " << feature << "\n";
    }
    if (type != common) out << "    node: " << node_yaml(type, tc) << "\n";
    if (p.name.find("test") != std::string::npos || p.name.find("debug") != std::string::npos)
      out << "    # test: true   # if this is for short tests only (never chosen unless named)\n";
  }
}

}  // namespace

std::string draft_profile(const ClusterFacts& facts, const std::string& name) {
  std::ostringstream out;
  const auto [common, common_count] = common_type(facts);
  out << "# Drafted by `ddpgen profile init` from the live cluster (scontrol show partition,\n"
         "# scontrol show node). Slurm does not tell accounts, modules, containers or QOS\n"
         "# limits: fill in the commented keys, then check with\n"
         "#   ddpgen validate --live --profile "
      << name << "\n";
  out << "description: " << name << " (drafted from the live cluster)\n";
  out << "ddp_plugin: " << (facts.ddp_plugin ? "true" : "false") << "\n";
  out << "# account: {required: true, hint: <project>}\n";
  out << "node: " << node_yaml(common, common_count) << "\n";
  if (common.gpus > 0 && common.cores > 0)
    out << "cpus_per_gpu: " << common.cores / common.gpus << "\n";
  out << "partitions:\n";
  // Default partition first: ddpgen picks the first that fits.
  std::vector<const ClusterPartition*> order;
  for (const auto& p : facts.partitions) order.push_back(&p);
  std::ranges::stable_partition(order, [](const auto* p) { return p->is_default; });
  for (const auto* p : order) draft_partition(out, facts, *p, common);
  out << "# modules: [pytorch]\n"
         "# container: {runtimes: [apptainer]}\n";
  return out.str();
}

}  // namespace ddpgen
