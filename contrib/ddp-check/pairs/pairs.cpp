// The round-robin schedule of node pairs and the slow-node verdict.
#include "ddp-check/pairs/pairs.hpp"

#include <algorithm>
#include <cstdio>

#include "libddp/util/text.hpp"

namespace ddp::check {
namespace {

std::string fixed1(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", value);
  return buf;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// A table of `hosts` x `hosts` cells, "-" where `cell` has nothing; `last` adds a column.
template <class Cell, class Last>
std::string matrix(const std::vector<std::string>& hosts, const std::string& title, Cell cell,
                   const std::string& last_title, Last last) {
  const std::size_t n = hosts.size();
  std::size_t host_width = 4;
  for (const auto& h : hosts) host_width = std::max(host_width, h.size());
  std::vector<std::vector<std::string>> rows(n);
  std::size_t width = std::max<std::size_t>(5, text::decimal(n).size());
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      std::optional<double> v = i == j ? std::nullopt : cell(i, j);
      rows[i].push_back(v ? fixed1(*v) : "-");
      width = std::max(width, rows[i].back().size());
    }
  }
  auto pad = [](std::string s, std::size_t w) {
    return std::string(w - std::min(w, s.size()), ' ') + s;
  };
  std::string out = title + "\n" + pad("node", 4) + " " + std::string(host_width, ' ');
  for (std::size_t j = 0; j < n; ++j) out += " " + pad(text::decimal(j), width);
  out += "  " + last_title + "\n";
  for (std::size_t i = 0; i < n; ++i) {
    out +=
        pad(text::decimal(i), 4) + " " + hosts[i] + std::string(host_width - hosts[i].size(), ' ');
    for (const auto& c : rows[i]) out += " " + pad(c, width);
    out += "  " + last(i) + "\n";
  }
  return out;
}

// A large step's table: the slow nodes and the lowest others, one line each, lowest first.
std::string lowest_nodes(const std::vector<std::string>& hosts,
                         const std::vector<PairResult>& results, const PairVerdict& verdict,
                         const PairMetric& metric) {
  const std::size_t n = hosts.size();
  std::vector<std::size_t> measured(n, 0), pairs(n, 0);
  std::vector<std::vector<double>> rtts(n);
  for (const PairResult& r : results) {
    for (std::uint32_t i : {r.pair.first, r.pair.second}) {
      if (i >= n) continue;
      ++pairs[i];
      if (r.bandwidth) ++measured[i];
      if (r.rtt_us) rtts[i].push_back(*r.rtt_us);
    }
  }
  auto figure = [&](std::size_t i) {
    return i < verdict.node_bandwidth.size() ? verdict.node_bandwidth[i] : 0.0;
  };
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return figure(a) < figure(b); });
  const std::size_t shown = std::min(n, std::max(k_pair_list_lowest, verdict.slow.size()));
  std::string out = metric.title + ": the " + text::decimal(shown) + " lowest of " +
                    text::plural(n, "node") + " (best pair, pairs measured" +
                    (metric.round_trip ? ", median round trip" : "") + ")\n";
  for (std::size_t k = 0; k < shown; ++k) {
    const std::size_t i = order[k];
    const bool slow = std::find(verdict.slow.begin(), verdict.slow.end(), i) != verdict.slow.end();
    out += "  " + hosts[i] + " " + fixed1(figure(i)) + " " + metric.unit + ", " +
           text::decimal(measured[i]) + " of " + text::decimal(pairs[i]);
    if (metric.round_trip) out += rtts[i].empty() ? ", -" : ", " + fixed1(median(rtts[i])) + " us";
    out += slow ? " SLOW\n" : "\n";
  }
  return out;
}

}  // namespace

PairMetric tcp_metric() {
  return {"", "pairs: bandwidth in Gbit/s (the slower direction)", "Gbit/s", true};
}

PairMetric nccl_metric() {
  return {"NCCL send/recv", "pairs: NCCL send/recv in GB/s (the slower side)", "GB/s", false};
}

std::vector<PairRound> pair_rounds(std::uint32_t nodes, std::uint32_t max_rounds) {
  if (nodes < 2) return {};
  // An odd count gets a placeholder node; whoever meets it sits the round out.
  const std::uint32_t m = nodes + nodes % 2;
  std::vector<std::uint32_t> seat(m);
  for (std::uint32_t i = 0; i < m; ++i) seat[i] = i;
  std::uint32_t rounds = m - 1;
  if (max_rounds > 0) rounds = std::min(rounds, max_rounds);
  std::vector<PairRound> out(rounds);
  for (std::uint32_t r = 0; r < rounds; ++r) {
    for (std::uint32_t i = 0; i < m / 2; ++i) {
      std::uint32_t a = seat[i], b = seat[m - 1 - i];
      if (a >= nodes || b >= nodes) continue;
      out[r].push_back({std::min(a, b), std::max(a, b)});
    }
    // Seat 0 stays, the others move one seat on.
    std::rotate(seat.begin() + 1, seat.end() - 1, seat.end());
  }
  return out;
}

PairVerdict judge_pairs(std::uint32_t nodes, const std::vector<PairResult>& results,
                        double threshold, const std::vector<bool>& silent) {
  PairVerdict v;
  v.node_bandwidth.assign(nodes, 0.0);
  v.scored.assign(nodes, false);
  auto is_silent = [&](std::uint32_t n) { return n < silent.size() && silent[n]; };
  for (std::uint32_t n = 0; n < nodes; ++n) {
    if (is_silent(n)) v.silent.push_back(n);
  }
  for (const PairResult& r : results) {
    if (r.pair.first >= nodes || r.pair.second >= nodes) continue;
    if (is_silent(r.pair.first) || is_silent(r.pair.second)) continue;
    const double bw = r.bandwidth.value_or(0.0);
    for (std::uint32_t n : {r.pair.first, r.pair.second}) {
      v.node_bandwidth[n] = std::max(v.node_bandwidth[n], bw);
      v.scored[n] = true;
    }
  }
  std::vector<double> figures;
  for (std::uint32_t n = 0; n < nodes; ++n) {
    if (v.scored[n]) figures.push_back(v.node_bandwidth[n]);
  }
  v.median = median(figures);
  if (nodes < 3) {
    v.undecided = "fewer than 3 nodes: a slow pair does not tell which of its nodes is slow";
  } else if (figures.size() < 3) {
    v.undecided =
        "fewer than 3 nodes measured (the others sat out or did not answer): a slow pair does "
        "not tell which of its nodes is slow";
  } else if (v.median <= 0) {
    // Half the nodes or more measured nothing: the fault is not one node's.
    v.undecided = "no bandwidth measured for half of the nodes or more";
  } else {
    for (std::uint32_t n = 0; n < nodes; ++n) {
      if (v.scored[n] && v.node_bandwidth[n] < threshold * v.median) v.slow.push_back(n);
    }
  }
  return v;
}

std::string render_pair_table(const std::vector<std::string>& hosts,
                              const std::vector<PairResult>& results, const PairVerdict& verdict,
                              const PairMetric& metric) {
  if (hosts.size() > k_pair_matrix_max_nodes) return lowest_nodes(hosts, results, verdict, metric);
  auto find = [&](std::size_t i, std::size_t j) -> const PairResult* {
    for (const PairResult& r : results) {
      if ((r.pair.first == i && r.pair.second == j) || (r.pair.first == j && r.pair.second == i))
        return &r;
    }
    return nullptr;
  };
  auto bw = [&](std::size_t i, std::size_t j) -> std::optional<double> {
    const PairResult* r = find(i, j);
    return r != nullptr ? r->bandwidth : std::nullopt;
  };
  auto rtt = [&](std::size_t i, std::size_t j) -> std::optional<double> {
    const PairResult* r = find(i, j);
    return r != nullptr ? r->rtt_us : std::nullopt;
  };
  auto figure = [&](std::size_t i) {
    bool slow = std::find(verdict.slow.begin(), verdict.slow.end(), i) != verdict.slow.end();
    bool silent =
        std::find(verdict.silent.begin(), verdict.silent.end(), i) != verdict.silent.end();
    if (silent) return std::string("- NO ANSWER");
    if (i < verdict.scored.size() && !verdict.scored[i]) return std::string("-");
    double value = i < verdict.node_bandwidth.size() ? verdict.node_bandwidth[i] : 0.0;
    return fixed1(value) + (slow ? " SLOW" : "");
  };
  std::string out = matrix(hosts, metric.title, bw, "best", figure);
  if (!metric.round_trip) return out;
  return out + matrix(hosts, "pairs: round trip in microseconds", rtt, "",
                      [](std::size_t) { return std::string(); });
}

std::string describe_pairs(const std::vector<std::string>& hosts, const PairVerdict& verdict,
                           double threshold, const PairMetric& metric) {
  char share[32];
  std::snprintf(share, sizeof share, "%g", threshold);
  const std::string unit = " " + metric.unit;
  const std::string rule =
      "median " + fixed1(verdict.median) + unit + ", threshold " + share + " x median";
  if (verdict.undecided) return "no slow node named: " + *verdict.undecided;
  if (verdict.slow.empty()) return "no slow node (" + rule + ")";
  std::vector<std::string> named;
  for (std::uint32_t n : verdict.slow) {
    const std::string host = n < hosts.size() ? hosts[n] : "node " + text::decimal(n);
    named.push_back(host + " (" + fixed1(verdict.node_bandwidth[n]) + unit + ")");
  }
  return "slow: " + text::join(named, ", ") + "; " + rule;
}

std::string slow_evidence(const PairVerdict& verdict, std::uint32_t node,
                          const PairMetric& metric) {
  auto fixed2 = [](double value) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", value);
    return std::string(buf);
  };
  const double figure = node < verdict.node_bandwidth.size() ? verdict.node_bandwidth[node] : 0;
  return (metric.name.empty() ? "" : metric.name + ": ") + "best pair " + fixed2(figure) + " " +
         metric.unit + ", median " + fixed2(verdict.median) + " " + metric.unit;
}

std::string pairs_header(std::size_t nodes, std::size_t rounds, std::size_t all_rounds,
                         double seconds, std::uint64_t nccl_bytes,
                         const std::optional<std::string>& nccl_skip) {
  char per[32];
  std::snprintf(per, sizeof per, "%.2f", seconds);
  const std::string schedule =
      rounds < all_rounds ? text::decimal(rounds) + " of " + text::plural(all_rounds, "round") +
                                " (each node meets " + text::decimal(rounds) + " others)"
                          : text::plural(rounds, "round");
  return "pairs: " + text::plural(nodes, "node") + ", " + schedule + ", " + per +
         " s per direction; " +
         (nccl_skip ? "NCCL send/recv skipped: " + *nccl_skip
                    : "then NCCL send/recv, " + text::decimal(nccl_bytes) + " bytes each way");
}

double pairs_longest_silence_s(double seconds, bool nccl) {
  return std::max(
      {k_pairs_register_s, 2 * seconds + k_pairs_round_margin_s, nccl ? k_nccl_round_s : 0.0});
}

std::string round_done(const PairMetric& metric, std::size_t done, std::size_t rounds) {
  return "pairs: " + (metric.name.empty() ? "" : metric.name + ": ") + "round " +
         text::decimal(done) + " of " + text::decimal(rounds) + " done";
}

}  // namespace ddp::check
