// verify_world(): the faults rank 0 can name from the hellos it received, and the table.
#include "verify.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ddp::check {
namespace {

constexpr std::uint32_t k_no_node = std::numeric_limits<std::uint32_t>::max();

std::string rank_noun(Scope scope) {
  return scope == Scope::ranks ? "RANK" : "NODE_RANK";
}
std::string world_noun(Scope scope) {
  return scope == Scope::ranks ? "WORLD_SIZE" : "NNODES";
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += sep;
    out += item;
  }
  return out;
}

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return std::string(n == 1 ? one : many);
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

std::string node_label(const NodeKey& key, const NodeView& view) {
  std::vector<std::string> hosts(view.hosts.begin(), view.hosts.end());
  if (key.node_rank == k_no_node) return "host " + key.host;
  return "node " + std::to_string(key.node_rank) + " (" + join(hosts, ", ") + ")";
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
    std::string part = noun + (ranks.size() == 1 ? " " : "s ") + format_ranges(ranks);
    if (hosts.size() <= 3) {
      part += " (" + join(std::vector<std::string>(hosts.begin(), hosts.end()), ", ") + ")";
    }
    part += (who.size() == 1 ? " says " : " say ") + std::to_string(value);
    parts.push_back(part);
  }
  return join(parts, ", ");
}

template <class Get>
bool values_differ(const std::vector<const Hello*>& members, Get get) {
  for (const Hello* h : members) {
    if (get(*h) != get(*members.front())) return true;
  }
  return false;
}

// Node-level facts for naming where missing ranks belong.
struct NodeShortfall {
  std::string label;
  std::vector<std::uint32_t> missing_local;
  std::vector<std::uint32_t> predicted_ranks;  // when the node's ranks form one block
};

}  // namespace

std::string format_ranges(std::vector<std::uint32_t> numbers) {
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  std::string out;
  for (std::size_t i = 0; i < numbers.size();) {
    std::size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(numbers[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(numbers[j]);
    i = j + 1;
  }
  return out;
}

WorldReport verify_world(std::span<const Hello> hellos, const Hello& expected, Scope scope) {
  WorldReport report;
  auto& faults = report.faults;
  const std::string rank_word = rank_noun(scope);
  const std::string world_word = world_noun(scope);
  const std::uint32_t world = expected.world_size;

  std::vector<const Hello*> all;
  for (const auto& h : hellos) all.push_back(&h);

  // 1. Sizes every process must agree on. Rank 0's own view joins the vote.
  std::vector<const Hello*> voters = all;
  bool has_expected = std::any_of(hellos.begin(), hellos.end(), [&](const Hello& h) {
    return h.rank == expected.rank && h.pid == expected.pid && h.host == expected.host;
  });
  if (!has_expected) voters.push_back(&expected);
  auto get_world = [](const Hello& h) { return h.world_size; };
  if (values_differ(voters, get_world)) {
    faults.push_back("inconsistent " + world_word + ": " + disagreement(voters, get_world, scope));
  }
  auto get_nnodes = [](const Hello& h) { return h.nnodes.value_or(k_no_node); };
  if (scope == Scope::ranks && values_differ(voters, get_nnodes)) {
    faults.push_back("inconsistent NNODES: " + disagreement(voters, get_nnodes, scope));
  }
  auto get_nproc = [](const Hello& h) { return h.nproc_per_node; };
  if (scope == Scope::nodes && values_differ(voters, get_nproc)) {
    faults.push_back("inconsistent NPROC_PER_NODE: " + disagreement(voters, get_nproc, scope));
  }

  // 2. Ranks: in range, unique, complete.
  std::map<std::uint32_t, std::vector<const Hello*>> by_rank;
  for (const Hello* h : all) by_rank[h->rank].push_back(h);
  for (const auto& [rank, who] : by_rank) {
    if (rank >= world) {
      std::set<std::string> hosts;
      for (const Hello* h : who) hosts.insert(h->host);
      faults.push_back(rank_word + " " + std::to_string(rank) + " from " +
                       join(std::vector<std::string>(hosts.begin(), hosts.end()), ", ") +
                       " is out of range for " + world_word + "=" + std::to_string(world));
    }
  }
  for (const auto& [rank, who] : by_rank) {
    if (who.size() < 2) continue;
    std::vector<const Hello*> sorted = who;
    std::sort(sorted.begin(), sorted.end(), [](const Hello* a, const Hello* b) {
      return a->host != b->host ? a->host < b->host : a->pid < b->pid;
    });
    std::vector<std::string> senders;
    for (const Hello* h : sorted)
      senders.push_back(h->host + " (pid " + std::to_string(h->pid) + ")");
    faults.push_back("duplicate " + rank_word + " " + std::to_string(rank) + " from " +
                     join(senders, ", "));
  }

  auto nodes = group_nodes(hellos);
  std::vector<std::uint32_t> missing;
  for (std::uint32_t r = 0; r < world && missing.size() < 100000; ++r) {
    if (!by_rank.contains(r)) missing.push_back(r);
  }
  if (!missing.empty()) {
    std::size_t arrived = 0;  // distinct ranks within 0..N-1
    for (const auto& entry : by_rank) arrived += entry.first < world ? 1 : 0;
    std::string text = "missing " + rank_word + " " + format_ranges(missing) + " (" + world_word +
                       "=" + std::to_string(world) + ", " + std::to_string(arrived) +
                       " distinct arrived)";
    std::vector<std::string> where;
    if (scope == Scope::ranks) {
      for (const auto& [key, view] : nodes) {
        if (key.node_rank == k_no_node) continue;
        const std::uint32_t local_world = view.members.front()->local_world_size;
        std::set<std::uint32_t> present;
        bool block = true;
        const auto base = static_cast<std::int64_t>(view.members.front()->rank) -
                          view.members.front()->local_rank;
        for (const Hello* h : view.members) {
          present.insert(h->local_rank);
          if (static_cast<std::int64_t>(h->rank) - h->local_rank != base) block = false;
        }
        std::vector<std::uint32_t> lacking, predicted;
        for (std::uint32_t l = 0; l < local_world && lacking.size() < 4096; ++l) {
          if (present.contains(l)) continue;
          lacking.push_back(l);
          const auto r = base + l;
          if (block && r >= 0 && r < world && !by_rank.contains(static_cast<std::uint32_t>(r))) {
            predicted.push_back(static_cast<std::uint32_t>(r));
          }
        }
        if (lacking.empty()) continue;
        std::string part = node_label(key, view) + " lacks LOCAL_RANK " + format_ranges(lacking) +
                           " of LOCAL_WORLD_SIZE=" + std::to_string(local_world);
        if (block && predicted.size() == lacking.size()) {
          part += " (" + rank_word + " " + format_ranges(predicted) + ")";
        }
        where.push_back(part);
      }
    }
    const std::uint32_t nnodes = expected.nnodes.value_or(0);
    std::vector<std::uint32_t> silent;
    for (std::uint32_t n = 0; n < nnodes && silent.size() < 100000; ++n) {
      if (!nodes.contains(NodeKey{n, {}})) silent.push_back(n);
    }
    if (!silent.empty()) {
      where.push_back(plural(silent.size(), "node ", "nodes ") + format_ranges(silent) +
                      " sent no rank at all");
    }
    if (!where.empty()) text += ": " + join(where, "; ");
    faults.push_back(text);
  }

  // 3. Nodes: one host per NODE_RANK, one NODE_RANK per host, NODE_RANK within NNODES.
  std::map<std::string, std::set<std::uint32_t>> host_nodes;
  for (const Hello* h : all) {
    if (h->node_rank) host_nodes[h->host].insert(*h->node_rank);
  }
  for (const auto& [key, view] : nodes) {
    if (key.node_rank == k_no_node) continue;
    if (view.hosts.size() > 1) {
      faults.push_back("NODE_RANK " + std::to_string(key.node_rank) + " claimed by hosts " +
                       join(std::vector<std::string>(view.hosts.begin(), view.hosts.end()), ", "));
    }
    if (expected.nnodes && key.node_rank >= *expected.nnodes) {
      faults.push_back("NODE_RANK " + std::to_string(key.node_rank) + " from " +
                       join(std::vector<std::string>(view.hosts.begin(), view.hosts.end()), ", ") +
                       " is out of range for NNODES=" + std::to_string(*expected.nnodes));
    }
  }
  for (const auto& [host, node_ranks] : host_nodes) {
    if (node_ranks.size() < 2) continue;
    faults.push_back(
        "host " + host + " reports NODE_RANK " +
        format_ranges(std::vector<std::uint32_t>(node_ranks.begin(), node_ranks.end())));
  }

  // 4. Within each node (ranks scope): LOCAL_WORLD_SIZE agreed, LOCAL_RANK unique and in range.
  if (scope == Scope::ranks) {
    std::uint64_t local_sum = 0;
    bool sum_meaningful = missing.empty();
    for (const auto& [key, view] : nodes) {
      const std::string label = node_label(key, view);
      auto get_local_world = [](const Hello& h) { return h.local_world_size; };
      if (values_differ(view.members, get_local_world)) {
        faults.push_back("inconsistent LOCAL_WORLD_SIZE on " + label + ": " +
                         disagreement(view.members, get_local_world, scope));
        sum_meaningful = false;
        continue;
      }
      const std::uint32_t local_world = view.members.front()->local_world_size;
      local_sum += local_world;
      std::map<std::uint32_t, std::vector<std::uint32_t>> by_local;
      for (const Hello* h : view.members) by_local[h->local_rank].push_back(h->rank);
      for (const auto& [local, ranks] : by_local) {
        if (local >= local_world) {
          faults.push_back("LOCAL_RANK " + std::to_string(local) + " of " + rank_word + " " +
                           format_ranges(ranks) + " on " + label +
                           " is out of range for LOCAL_WORLD_SIZE=" + std::to_string(local_world));
        } else if (ranks.size() > 1) {
          faults.push_back("duplicate LOCAL_RANK " + std::to_string(local) + " on " + label + ": " +
                           rank_word + " " + format_ranges(ranks));
        }
      }
    }
    if (sum_meaningful && !nodes.empty() && local_sum != world) {
      faults.push_back("LOCAL_WORLD_SIZE over the " + std::to_string(nodes.size()) +
                       " nodes sums to " + std::to_string(local_sum) + " but WORLD_SIZE is " +
                       std::to_string(world));
    }
  }
  return report;
}

std::string render_table(std::span<const Hello> hellos, Scope scope) {
  auto nodes = group_nodes(hellos);
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"NODE", "HOST", "RANKS", "LOCAL RANKS", "GPUS", "INTERFACE", "ADDRESS"});
  for (const auto& [key, view] : nodes) {
    std::vector<std::uint32_t> ranks, locals;
    std::set<std::string> gpu_items, ifaces, addrs;
    std::vector<std::string> gpu_texts;
    bool gpu_lists = true;
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
      // CUDA_VISIBLE_DEVICES lists merge ("0" + "1" -> "0,1"); anything else is shown as is.
      if (h->gpus == "-" || h->gpus.starts_with("n=")) gpu_lists = false;
      std::size_t start = 0;
      while (start <= h->gpus.size()) {
        auto comma = h->gpus.find(',', start);
        if (comma == std::string::npos) comma = h->gpus.size();
        gpu_items.insert(h->gpus.substr(start, comma - start));
        start = comma + 1;
      }
      if (std::find(gpu_texts.begin(), gpu_texts.end(), h->gpus) == gpu_texts.end()) {
        gpu_texts.push_back(h->gpus);
      }
      ifaces.insert(h->if_kind == "?" ? h->ifname : h->ifname + " (" + h->if_kind + ")");
      addrs.insert(h->address);
    }
    std::string gpus;
    if (gpu_lists) {
      std::vector<std::string> items(gpu_items.begin(), gpu_items.end());
      std::sort(items.begin(), items.end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() < b.size() : a < b;
      });
      gpus = join(items, ",");
    } else {
      gpus = join(gpu_texts, " ");
    }
    std::string node = key.node_rank == k_no_node ? "?" : std::to_string(key.node_rank);
    rows.push_back({node, join(std::vector<std::string>(view.hosts.begin(), view.hosts.end()), ","),
                    format_ranges(ranks), format_ranges(locals), gpus,
                    join(std::vector<std::string>(ifaces.begin(), ifaces.end()), ","),
                    join(std::vector<std::string>(addrs.begin(), addrs.end()), ",")});
  }
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
  return join(report.faults, "; ");
}

}  // namespace ddp::check
