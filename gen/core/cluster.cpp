#include "gen/core/cluster.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "gen/core/duration.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen {
namespace {

using Fields = SlurmFields;

// The non-empty fields of text between seps (scontrol leaves empty ones in lists).
std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  for (auto item : ddp::text::split(text, sep))
    if (!item.empty()) out.emplace_back(item);
  return out;
}

// A count from Slurm: digits, optionally with a K/M/G/T suffix; UNLIMITED and (null) are 0.
long count_of(const std::string& text) {
  const auto digits =
      std::find_if(text.begin(), text.end(), [](char c) { return c < '0' || c > '9'; });
  const std::string_view number(text.data(), static_cast<std::size_t>(digits - text.begin()));
  const std::string_view suffix(text.data() + number.size(), text.size() - number.size());
  // Beyond 9 digits a count is nonsense from a broken scontrol, read as unknown, never thrown.
  const auto value =
      number.size() <= 9 ? ddp::text::parse_uint<std::uint32_t>(number) : std::nullopt;
  if (!value) return 0;
  static const std::map<std::string_view, long> k_scale = {
      {"", 1L}, {"K", 1024L}, {"M", 1024L * 1024}, {"G", 1024L * 1024 * 1024}};
  const auto it = k_scale.find(suffix);
  return static_cast<long>(*value) * (it == k_scale.end() ? 1L : it->second);
}

// "gpu:v100:4(S:0-1),nvme:3600": items split at commas outside parentheses.
std::vector<ClusterGres> gres_of(const std::string& text) {
  std::vector<ClusterGres> out;
  std::string item;
  int depth = 0;
  auto flush = [&] {
    if (const auto paren = item.find('('); paren != std::string::npos) item.resize(paren);
    auto parts = split(item, ':');
    item.clear();
    if (parts.empty() || parts[0] == "(null)") return;
    ClusterGres g{parts[0], "", 1};
    if (parts.size() == 2) g.count = count_of(parts[1]);
    if (parts.size() >= 3) g = {parts[0], parts[1], count_of(parts[2])};
    out.push_back(g);
  };
  for (char c : text) {
    depth += (c == '(') - (c == ')');
    if (c == ',' && depth == 0)
      flush();
    else
      item += c;
  }
  flush();
  return out;
}

long long_of(const Fields& f, const std::string& key) {
  auto it = f.find(key);
  return it == f.end() ? 0 : count_of(it->second);
}

std::string value_of(const Fields& f, const std::string& key) {
  auto it = f.find(key);
  return it == f.end() || it->second == "(null)" ? "" : it->second;
}

ClusterPartition partition_of(const Fields& f) {
  ClusterPartition p;
  p.name = value_of(f, "PartitionName");
  p.min_nodes = long_of(f, "MinNodes");
  p.max_nodes = long_of(f, "MaxNodes");
  p.max_time = duration::parse(value_of(f, "MaxTime")).value_or(0);
  p.is_default = value_of(f, "Default") == "YES";
  return p;
}

ClusterNode node_of(const Fields& f) {
  ClusterNode n;
  n.name = value_of(f, "NodeName");
  n.cpus = long_of(f, "CPUTot");
  n.memory_mb = long_of(f, "RealMemory");
  n.tmp_disk_mb = long_of(f, "TmpDisk");
  n.features = split(value_of(f, "AvailableFeatures"), ',');
  n.gres = gres_of(value_of(f, "Gres"));
  n.partitions = split(value_of(f, "Partitions"), ',');
  return n;
}

}  // namespace

SlurmFields scontrol_fields(const std::string& line) {
  SlurmFields out;
  std::istringstream words(line);
  std::string word, last;
  while (words >> word) {
    const auto eq = word.find('=');
    // A word without '=' continues the previous value (OS=Linux 6.1.0-18-amd64 #1 SMP ...).
    if (eq == std::string::npos || eq == 0) {
      if (!last.empty()) out[last] += " " + word;
      continue;
    }
    last = word.substr(0, eq);
    out[last] = word.substr(eq + 1);
  }
  return out;
}

long ClusterNode::gpus() const {
  long total = 0;
  for (const auto& g : gres)
    if (g.name == "gpu") total += g.count;
  return total;
}

std::string ClusterNode::gpu_type() const {
  std::string type;
  for (const auto& g : gres) {
    if (g.name != "gpu") continue;
    if (!type.empty() && type != g.type) return "";
    type = g.type;
  }
  return type;
}

std::vector<const ClusterNode*> ClusterFacts::nodes_of(const std::string& name) const {
  std::vector<const ClusterNode*> out;
  for (const auto& n : nodes)
    if (std::ranges::find(n.partitions, name) != n.partitions.end()) out.push_back(&n);
  return out;
}

Result<ClusterFacts> parse_cluster(const std::string& partitions, const std::string& nodes) {
  ClusterFacts facts;
  int line_no = 0;
  for (const auto& line : split(partitions, '\n')) {
    ++line_no;
    auto f = scontrol_fields(line);
    if (value_of(f, "PartitionName").empty())
      return ddp::fail(ddp::Location{"scontrol show partition", line_no, 1},
                       "no PartitionName= in " + ddp::text::quote(line.substr(0, 60)));
    facts.partitions.push_back(partition_of(f));
  }
  line_no = 0;
  for (const auto& line : split(nodes, '\n')) {
    ++line_no;
    auto f = scontrol_fields(line);
    if (value_of(f, "NodeName").empty())
      return ddp::fail(ddp::Location{"scontrol show node", line_no, 1},
                       "no NodeName= in " + ddp::text::quote(line.substr(0, 60)));
    facts.nodes.push_back(node_of(f));
  }
  if (facts.partitions.empty())
    return ddp::fail({"scontrol show partition", 0, 0}, "the cluster reports no partitions");
  return facts;
}

}  // namespace ddpgen
