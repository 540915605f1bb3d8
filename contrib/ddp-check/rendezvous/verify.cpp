// verify_world(): the faults rank 0 can name from the hellos it received, and the table.
#include "ddp-check/rendezvous/verify.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "libddp/core/hostlist.hpp"
#include "libddp/util/text.hpp"

namespace ddp::check {
namespace {

constexpr std::uint32_t k_no_node = std::numeric_limits<std::uint32_t>::max();

std::string rank_noun(Scope scope) {
  return scope == Scope::ranks ? "RANK" : "NODE_RANK";
}
std::string world_noun(Scope scope) {
  return scope == Scope::ranks ? "WORLD_SIZE" : "NNODES";
}

// A node as the hellos describe it: NODE_RANK when the environment gives one, else the host.
struct NodeKey {
  std::uint32_t node_rank = k_no_node;
  std::string host;  // only when node_rank is unknown
  auto operator<=>(const NodeKey&) const = default;
};

NodeKey node_key(const Hello& h) {
  if (h.node_rank) return {*h.node_rank, {}};
  return {k_no_node, h.host};
}

struct NodeView {
  std::vector<const Hello*> members;
  std::set<std::string> hosts;
};

std::map<NodeKey, NodeView> group_nodes(std::span<const Hello> hellos) {
  std::map<NodeKey, NodeView> nodes;
  for (const auto& h : hellos) {
    auto& node = nodes[node_key(h)];
    node.members.push_back(&h);
    node.hosts.insert(h.host);
  }
  return nodes;
}

// Host names as one Slurm hostlist: "node[01-03,07]".
std::string hostlist(const std::set<std::string>& hosts) {
  return format_hostlist(std::vector<std::string>(hosts.begin(), hosts.end()));
}

std::string node_label(const NodeKey& key, const NodeView& view) {
  if (key.node_rank == k_no_node) return "host " + key.host;
  return "node " + std::to_string(key.node_rank) + " (" + hostlist(view.hosts) + ")";
}

// "ranks 0-2 say 4, rank 3 (hostb) says 6": who reported which value of one variable.
template <class Get>
std::string disagreement(const std::vector<const Hello*>& members, Get get, Scope scope) {
  std::map<std::uint32_t, std::vector<const Hello*>> by_value;
  for (const Hello* h : members) by_value[get(*h)].push_back(h);
  std::vector<std::string> parts;
  const std::string noun = scope == Scope::ranks ? "rank" : "node";
  for (const auto& [value, who] : by_value) {
    std::vector<std::uint32_t> ranks;
    std::set<std::string> hosts;
    for (const Hello* h : who) {
      ranks.push_back(h->rank);
      hosts.insert(h->host);
    }
    std::string part = text::noun(ranks.size(), noun) + " " + format_ranges(ranks);
    if (hosts.size() <= 3) part += " (" + hostlist(hosts) + ")";
    part += " " + text::noun(who.size(), "says", "say") + " " + std::to_string(value);
    parts.push_back(part);
  }
  return text::join(parts, ", ");
}

template <class Get>
bool values_differ(const std::vector<const Hello*>& members, Get get) {
  for (const Hello* h : members) {
    if (get(*h) != get(*members.front())) return true;
  }
  return false;
}

}  // namespace

namespace {

// What every check of verify_world() reads: the hellos, rank 0's own view, and indexes.
struct World {
  const Hello& expected;
  Scope scope;
  std::string rank_word;
  std::string world_word;
  std::uint32_t world = 0;
  std::vector<const Hello*> all;
  std::map<std::uint32_t, std::vector<const Hello*>> by_rank;
  std::map<NodeKey, NodeView> nodes;
};

// 1. Sizes every process must agree on. Rank 0's own view joins the vote.
void check_sizes(const World& w, std::vector<std::string>& faults) {
  std::vector<const Hello*> voters = w.all;
  bool has_expected = std::any_of(w.all.begin(), w.all.end(), [&](const Hello* h) {
    return h->rank == w.expected.rank && h->pid == w.expected.pid && h->host == w.expected.host;
  });
  if (!has_expected) voters.push_back(&w.expected);
  auto get_world = [](const Hello& h) { return h.world_size; };
  if (values_differ(voters, get_world)) {
    faults.push_back("inconsistent " + w.world_word + ": " +
                     disagreement(voters, get_world, w.scope));
  }
  auto get_nnodes = [](const Hello& h) { return h.nnodes.value_or(k_no_node); };
  if (w.scope == Scope::ranks && values_differ(voters, get_nnodes)) {
    faults.push_back("inconsistent NNODES: " + disagreement(voters, get_nnodes, w.scope));
  }
  auto get_nproc = [](const Hello& h) { return h.nproc_per_node; };
  if (w.scope == Scope::nodes && values_differ(voters, get_nproc)) {
    faults.push_back("inconsistent NPROC_PER_NODE: " + disagreement(voters, get_nproc, w.scope));
  }
}

// 2. Ranks: in range and unique.
void check_ranks(const World& w, std::vector<std::string>& faults) {
  for (const auto& [rank, who] : w.by_rank) {
    if (rank < w.world) continue;
    std::set<std::string> hosts;
    for (const Hello* h : who) hosts.insert(h->host);
    faults.push_back(w.rank_word + " " + std::to_string(rank) + " from " + hostlist(hosts) +
                     " is out of range for " + w.world_word + "=" + std::to_string(w.world));
  }
  for (const auto& [rank, who] : w.by_rank) {
    if (who.size() < 2) continue;
    std::vector<const Hello*> sorted = who;
    std::sort(sorted.begin(), sorted.end(), [](const Hello* a, const Hello* b) {
      return a->host != b->host ? a->host < b->host : a->pid < b->pid;
    });
    // A few senders by host and pid; many as a count and one hostlist, one short line.
    std::vector<std::string> senders;
    std::set<std::string> hosts;
    for (const Hello* h : sorted) {
      senders.push_back(h->host + " (pid " + std::to_string(h->pid) + ")");
      hosts.insert(h->host);
    }
    std::string from = sorted.size() <= 3
                           ? text::join(senders, ", ")
                           : std::to_string(sorted.size()) + " processes on " + hostlist(hosts);
    faults.push_back("duplicate " + w.rank_word + " " + std::to_string(rank) + " from " + from);
  }
}

// "node 1 (hostb) lacks LOCAL_RANK 0 of LOCAL_WORLD_SIZE=2 (RANK 2)", or "" when it lacks none.
std::string node_shortfall(const World& w, const NodeKey& key, const NodeView& view) {
  const std::uint32_t local_world = view.members.front()->local_world_size;
  std::set<std::uint32_t> present;
  bool block = true;
  const auto base =
      static_cast<std::int64_t>(view.members.front()->rank) - view.members.front()->local_rank;
  for (const Hello* h : view.members) {
    present.insert(h->local_rank);
    if (static_cast<std::int64_t>(h->rank) - h->local_rank != base) block = false;
  }
  std::vector<std::uint32_t> lacking, predicted;
  for (std::uint32_t l = 0; l < local_world && lacking.size() < 4096; ++l) {
    if (present.contains(l)) continue;
    lacking.push_back(l);
    const auto r = base + l;
    if (block && r >= 0 && r < w.world && !w.by_rank.contains(static_cast<std::uint32_t>(r))) {
      predicted.push_back(static_cast<std::uint32_t>(r));
    }
  }
  if (lacking.empty()) return "";
  std::string part = node_label(key, view) + " lacks LOCAL_RANK " + format_ranges(lacking) +
                     " of LOCAL_WORLD_SIZE=" + std::to_string(local_world);
  if (block && predicted.size() == lacking.size()) {
    part += " (" + w.rank_word + " " + format_ranges(predicted) + ")";
  }
  return part;
}

// 2. Ranks: complete. Names the missing ones with the node they belong to where other ranks of
// that node tell it, and the nodes that sent nothing. Returns the missing ranks.
std::vector<std::uint32_t> check_missing(const World& w, std::vector<std::string>& faults) {
  std::vector<std::uint32_t> missing;
  for (std::uint32_t r = 0; r < w.world && missing.size() < 100000; ++r) {
    if (!w.by_rank.contains(r)) missing.push_back(r);
  }
  if (missing.empty()) return missing;
  std::size_t arrived = 0;  // distinct ranks within 0..N-1
  for (const auto& entry : w.by_rank) arrived += entry.first < w.world ? 1 : 0;
  std::string text = "missing " + w.rank_word + " " + format_ranges(missing) + " (" + w.world_word +
                     "=" + std::to_string(w.world) + ", " + std::to_string(arrived) +
                     " distinct arrived)";
  std::vector<std::string> where;
  if (w.scope == Scope::ranks) {
    for (const auto& [key, view] : w.nodes) {
      if (key.node_rank == k_no_node) continue;
      if (auto part = node_shortfall(w, key, view); !part.empty()) where.push_back(part);
    }
  }
  const std::uint32_t nnodes = w.expected.nnodes.value_or(0);
  std::vector<std::uint32_t> silent;
  for (std::uint32_t n = 0; n < nnodes && silent.size() < 100000; ++n) {
    if (!w.nodes.contains(NodeKey{n, {}})) silent.push_back(n);
  }
  if (!silent.empty()) {
    where.push_back(text::noun(silent.size(), "node") + " " + format_ranges(silent) +
                    " sent no rank at all");
  }
  if (!where.empty()) text += ": " + text::join(where, "; ");
  faults.push_back(text);
  return missing;
}

// 3. Nodes: one host per NODE_RANK, one NODE_RANK per host, NODE_RANK within NNODES.
void check_nodes(const World& w, std::vector<std::string>& faults) {
  std::map<std::string, std::set<std::uint32_t>> host_nodes;
  for (const Hello* h : w.all) {
    if (h->node_rank) host_nodes[h->host].insert(*h->node_rank);
  }
  for (const auto& [key, view] : w.nodes) {
    if (key.node_rank == k_no_node) continue;
    if (view.hosts.size() > 1) {
      faults.push_back("NODE_RANK " + std::to_string(key.node_rank) + " claimed by hosts " +
                       hostlist(view.hosts));
    }
    if (w.expected.nnodes && key.node_rank >= *w.expected.nnodes) {
      faults.push_back("NODE_RANK " + std::to_string(key.node_rank) + " from " +
                       hostlist(view.hosts) +
                       " is out of range for NNODES=" + std::to_string(*w.expected.nnodes));
    }
  }
  for (const auto& [host, node_ranks] : host_nodes) {
    if (node_ranks.size() < 2) continue;
    faults.push_back(
        "host " + host + " reports NODE_RANK " +
        format_ranges(std::vector<std::uint32_t>(node_ranks.begin(), node_ranks.end())));
  }
}

// 4. Within one node: LOCAL_WORLD_SIZE agreed, LOCAL_RANK unique and in range. Returns the
// node's LOCAL_WORLD_SIZE, or nullopt when its ranks disagree on it.
std::optional<std::uint32_t> check_node_locals(const World& w, const NodeKey& key,
                                               const NodeView& view,
                                               std::vector<std::string>& faults) {
  const std::string label = node_label(key, view);
  auto get_local_world = [](const Hello& h) { return h.local_world_size; };
  if (values_differ(view.members, get_local_world)) {
    faults.push_back("inconsistent LOCAL_WORLD_SIZE on " + label + ": " +
                     disagreement(view.members, get_local_world, w.scope));
    return std::nullopt;
  }
  const std::uint32_t local_world = view.members.front()->local_world_size;
  std::map<std::uint32_t, std::vector<std::uint32_t>> by_local;
  for (const Hello* h : view.members) by_local[h->local_rank].push_back(h->rank);
  for (const auto& [local, ranks] : by_local) {
    if (local >= local_world) {
      faults.push_back("LOCAL_RANK " + std::to_string(local) + " of " + w.rank_word + " " +
                       format_ranges(ranks) + " on " + label +
                       " is out of range for LOCAL_WORLD_SIZE=" + std::to_string(local_world));
    } else if (ranks.size() > 1) {
      faults.push_back("duplicate LOCAL_RANK " + std::to_string(local) + " on " + label + ": " +
                       w.rank_word + " " + format_ranges(ranks));
    }
  }
  return local_world;
}

// 4. Every node's local ranks, and (when nothing is missing) the local sizes add up to WORLD_SIZE.
void check_locals(const World& w, bool complete, std::vector<std::string>& faults) {
  std::uint64_t local_sum = 0;
  bool sum_meaningful = complete;
  for (const auto& [key, view] : w.nodes) {
    auto local_world = check_node_locals(w, key, view, faults);
    if (!local_world) sum_meaningful = false;
    local_sum += local_world.value_or(0);
  }
  if (sum_meaningful && !w.nodes.empty() && local_sum != w.world) {
    faults.push_back("LOCAL_WORLD_SIZE over the " + std::to_string(w.nodes.size()) +
                     " nodes sums to " + std::to_string(local_sum) + " but WORLD_SIZE is " +
                     std::to_string(w.world));
  }
}

}  // namespace

WorldReport verify_world(std::span<const Hello> hellos, const Hello& expected, Scope scope) {
  World w{expected, scope, rank_noun(scope), world_noun(scope), expected.world_size, {}, {}, {}};
  for (const auto& h : hellos) w.all.push_back(&h);
  for (const Hello* h : w.all) w.by_rank[h->rank].push_back(h);
  w.nodes = group_nodes(hellos);
  WorldReport report;
  check_sizes(w, report.faults);
  check_ranks(w, report.faults);
  const bool complete = check_missing(w, report.faults).empty();
  check_nodes(w, report.faults);
  if (scope == Scope::ranks) check_locals(w, complete, report.faults);
  return report;
}

namespace {

// The GPUS cell of one node: CUDA_VISIBLE_DEVICES lists merge ("0" + "1" -> "0,1"); anything
// else is shown as is.
std::string gpu_cell(const NodeView& view) {
  std::set<std::string> gpu_items;
  std::vector<std::string> gpu_texts;
  bool gpu_lists = true;
  for (const Hello* h : view.members) {
    if (h->gpus == "-" || h->gpus.starts_with("n=")) gpu_lists = false;
    for (std::string_view item : text::split(h->gpus, ',')) {
      if (!item.empty()) gpu_items.insert(std::string(item));
    }
    if (std::find(gpu_texts.begin(), gpu_texts.end(), h->gpus) == gpu_texts.end()) {
      gpu_texts.push_back(h->gpus);
    }
  }
  if (!gpu_lists) return text::join(gpu_texts, " ");
  std::vector<std::string> items(gpu_items.begin(), gpu_items.end());
  std::sort(items.begin(), items.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return text::join(items, ",");
}

// One row of the table: node, host, ranks, local ranks, GPUs, interface, address.
std::vector<std::string> table_row(const NodeKey& key, const NodeView& view, Scope scope) {
  std::vector<std::uint32_t> ranks, locals;
  std::set<std::string> ifaces, addrs;
  for (const Hello* h : view.members) {
    if (scope == Scope::nodes) {
      for (std::uint32_t l = 0; l < h->nproc_per_node && l < 4096; ++l) {
        ranks.push_back(h->rank * h->nproc_per_node + l);
        locals.push_back(l);
      }
    } else {
      ranks.push_back(h->rank);
      locals.push_back(h->local_rank);
    }
    ifaces.insert(h->if_kind == "?" ? h->ifname : h->ifname + " (" + h->if_kind + ")");
    addrs.insert(h->address);
  }
  std::string node = key.node_rank == k_no_node ? "?" : std::to_string(key.node_rank);
  return {node,           hostlist(view.hosts),    format_ranges(ranks),  format_ranges(locals),
          gpu_cell(view), text::join(ifaces, ","), text::join(addrs, ",")};
}

}  // namespace

std::string render_table(std::span<const Hello> hellos, Scope scope) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"NODE", "HOST", "RANKS", "LOCAL RANKS", "GPUS", "INTERFACE", "ADDRESS"});
  for (const auto& [key, view] : group_nodes(hellos)) rows.push_back(table_row(key, view, scope));
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string summarize(const WorldReport& report) {
  return text::join(report.faults, "; ");
}

}  // namespace ddp::check
