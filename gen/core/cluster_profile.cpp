// Draft profiles from a live cluster, and a profile's differences from one (cluster.hpp).
#include <algorithm>
#include <cctype>
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

// The ranges the profile reader accepts (profile.cpp): a count beyond them, which only a
// garbled or hostile scontrol reports, is written as the bound so that the draft loads.
constexpr long k_max_gpus = 64;
constexpr long k_max_cores = 100000;
constexpr long k_max_memory_gb = 10000000;
constexpr long k_max_nodes = 100000;
constexpr long k_max_cpus_per_gpu = 1024;

std::string bounded(long value, long max) {
  return std::to_string(std::clamp(value, 0L, max));
}

// `text` as a YAML scalar that reads back as exactly `text`: plain when it is a name
// ("batch", "v100", "gpu_ai"), else double-quoted with \", \\ and \xNN escapes, so that a
// partition or feature called "*x" or "&y" (an alias, an anchor) or "no" still loads as text.
std::string yaml_scalar(std::string_view text) {
  const bool plain = !text.empty() && std::isalpha(static_cast<unsigned char>(text[0])) &&
                     text.find_first_not_of(
                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789_.-") == std::string_view::npos &&
                     text != "y" && text != "n" && text != "yes" && text != "no" && text != "on" &&
                     text != "off" && text != "true" && text != "false" && text != "null";
  if (plain) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7f) {
      static constexpr char k_hex[] = "0123456789abcdef";
      out += "\\x";
      out += k_hex[u >> 4];
      out += k_hex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string node_yaml(const NodeType& t, const TypeCount& c) {
  std::string out = "{gpus: " + bounded(t.gpus, k_max_gpus);
  if (!t.gpu_type.empty()) out += ", gpu_type: " + yaml_scalar(t.gpu_type);
  return out + ", cores: " + bounded(t.cores, k_max_cores) +
         ", memory_gb: " + bounded(c.memory_gb, k_max_memory_gb) + "}";
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
    out << "  - name: " << yaml_scalar(p.name) << "\n";
    out << "    description: " << count << " node" << (count == 1 ? "" : "s")
        << (p.is_default ? ", the default partition" : "") << "\n";
    const long max_nodes = p.max_nodes > 0 ? std::min(p.max_nodes, count) : count;
    if (max_nodes > 0) out << "    max_nodes: " << bounded(max_nodes, k_max_nodes) << "\n";
    if (p.min_nodes > 1) out << "    min_nodes: " << bounded(p.min_nodes, k_max_nodes) << "\n";
    if (p.max_time > 0) out << "    max_time: \"" << duration::format(p.max_time) << "\"\n";
    if (types.size() > 1) {
      const std::string feature = distinguishing_feature(nodes, type);
      if (feature.empty())
        out << "    # several node types share this partition and no feature tells this one "
               "apart\n";
      else
        out << "    constraint: " << yaml_scalar(feature) << "\n";
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
    out << "cpus_per_gpu: " << bounded(common.cores / common.gpus, k_max_cpus_per_gpu) << "\n";
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
