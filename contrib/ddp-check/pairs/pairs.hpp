// The pairwise test of a step's nodes: which pairs meet in which round, and which nodes are
// slow. Pure: the measurements come in as values, the verdict and the table go out as text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp::check {

// Two nodes (indices into the step's node list) that measure each other; `first` < `second`.
struct NodePair {
  std::uint32_t first = 0;
  std::uint32_t second = 0;
  friend bool operator==(const NodePair&, const NodePair&) = default;
};

// The pairs of one round: no node appears twice, so the pairs of a round run at once.
using PairRound = std::vector<NodePair>;

// Every pair of `nodes` nodes exactly once, in nodes - 1 rounds (even count) or nodes rounds
// (odd count: one node sits each round out), by the circle method of round-robin tournaments.
// `max_rounds` > 0 keeps only the first rounds (a sample of the pairs for large steps).
std::vector<PairRound> pair_rounds(std::uint32_t nodes, std::uint32_t max_rounds = 0);

// What a table and a verdict measure: TCP in Gbit/s with round trips, NCCL send/recv in GB/s.
struct PairMetric {
  std::string name;         // "" for TCP, else what the verdict and evidence lines start with
  std::string title;        // the bandwidth table's first line
  std::string unit;         // after every figure in the verdict
  bool round_trip = false;  // a second table of round trips in microseconds
};

// The TCP measurement: "pairs: bandwidth in Gbit/s (the slower direction)" and round trips.
PairMetric tcp_metric();
// NCCL send/recv: "pairs: NCCL send/recv in GB/s (the slower side)", no round trips.
PairMetric nccl_metric();

// One pair's measurement: bandwidth in the metric's unit (the slower of the two directions or
// sides) and the round-trip latency in microseconds; nullopt when not measured.
struct PairResult {
  NodePair pair;
  std::optional<double> bandwidth;
  std::optional<double> rtt_us;
};

// Default for --pairs-threshold: a node below half of the median is slow.
inline constexpr double k_default_pairs_threshold = 0.5;

// The verdict on the nodes.
struct PairVerdict {
  // A node's figure: the best bandwidth of the pairs it took part in (0 when none could be
  // measured). The best, not the mean: a healthy node's pairs with a slow peer are slow too,
  // but its pair with another healthy node is not, so only the slow node scores low.
  std::vector<double> node_bandwidth;
  // Whether a node has a figure: it took part in a pair whose sides both answered. A node that
  // sat every round out or met only silent peers has none, and is never named slow.
  std::vector<bool> scored;
  double median = 0;                  // of the scored nodes' figures
  std::vector<std::uint32_t> slow;    // scored nodes below threshold x median, in index order
  std::vector<std::uint32_t> silent;  // the nodes given as silent, in index order
  // Why no node can be named: fewer than three measured nodes cannot say which side of a
  // slow pair is at fault.
  std::optional<std::string> undecided;
};

// Scores the nodes from the results of `nodes` nodes and names those below `threshold` times
// the median of the scored nodes' figures. `silent[i]` marks a node whose agent did not answer
// rank 0 (or answered what rank 0 refused): its pairs count for neither side, so a silent node
// never makes its partner look slow, and it is not named slow itself (its caller names it as
// silent).
PairVerdict judge_pairs(std::uint32_t nodes, const std::vector<PairResult>& results,
                        double threshold, const std::vector<bool>& silent = {});

// Up to this many nodes the table is node x node; above, one line per node would not fit a
// terminal either, and only the lowest nodes are listed.
inline constexpr std::size_t k_pair_matrix_max_nodes = 32;
// How many of the lowest nodes the list of a larger step shows, the slow ones always.
inline constexpr std::size_t k_pair_list_lowest = 10;

// The node x node table: row i column j holds the pair (i, j) in the metric's unit and "-" on
// the diagonal or for a pair not measured; a last column with each node's figure and "SLOW" for
// the named ones; then the round trips when the metric has them. `hosts` names rows, columns.
// Above k_pair_matrix_max_nodes nodes: the nodes with the lowest figures, each with its figure,
// its pairs measured and its median round trip, lowest first.
std::string render_pair_table(const std::vector<std::string>& hosts,
                              const std::vector<PairResult>& results, const PairVerdict& verdict,
                              const PairMetric& metric);

// One line: "slow: node03 (0.9 Gbit/s); median 9.4 Gbit/s, threshold 0.5 x median" or
// "no slow node ...", in the metric's unit.
std::string describe_pairs(const std::vector<std::string>& hosts, const PairVerdict& verdict,
                           double threshold, const PairMetric& metric);

// The evidence of a slow node's suspect line: "best pair 0.19 Gbit/s, median 13.28 Gbit/s",
// after "NCCL send/recv: " for NCCL.
std::string slow_evidence(const PairVerdict& verdict, std::uint32_t node, const PairMetric& metric);

// The phase's first line: "pairs: 3 nodes, 3 rounds, 0.50 s per direction; " then
// "then NCCL send/recv, N bytes each way" or "NCCL send/recv skipped: WHY"; when `rounds` is
// fewer than `all_rounds`, "64 nodes, 10 of 63 rounds (each node meets 10 others), ...".
std::string pairs_header(std::size_t nodes, std::size_t rounds, std::size_t all_rounds,
                         double seconds, std::uint64_t nccl_bytes,
                         const std::optional<std::string>& nccl_skip);

// The bounds of rank 0's waits in the phase, in seconds: for the agents to register; for a TCP
// round beyond its two directions; for one side of an NCCL pair (communicator set-up and the
// transfers) and, a little longer, for the answers of an NCCL round.
inline constexpr double k_pairs_register_s = 10;
inline constexpr double k_pairs_round_margin_s = 8;
inline constexpr double k_nccl_pair_s = 20;
inline constexpr double k_nccl_round_s = k_nccl_pair_s + 5;

// The longest rank 0 can stay silent in the phase with `seconds` per direction (registration,
// one TCP round, one NCCL round when `nccl`), each round ending with a round_done() line. A
// watchdog that counts lines as progress must allow more: ddpgen's heal preflight gives
// ddp-watch the check's timeout + 30 s.
double pairs_longest_silence_s(double seconds, bool nccl);

// The line rank 0 prints after each round of a measurement: "pairs: round 3 of 15 done", or
// "pairs: NCCL send/recv: round 3 of 15 done". A phase that is silent for minutes on a large
// step would read as a stall to a watchdog (ddp-watch --timeout) and to a person.
std::string round_done(const PairMetric& metric, std::size_t done, std::size_t rounds);

}  // namespace ddp::check
