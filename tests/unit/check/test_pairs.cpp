// The pairwise schedule (every pair once, no node twice in a round) and the slow-node verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "ddp-check/pairs/pairs.hpp"

namespace ddp::check {
namespace {

TEST(PairRounds, EveryPairOnceNoNodeTwiceInARound) {
  for (std::uint32_t n : {0u, 1u, 2u, 3u, 4u, 5u, 8u, 9u, 16u, 33u}) {
    SCOPED_TRACE("nodes " + std::to_string(n));
    const auto rounds = pair_rounds(n);
    const std::uint32_t expected_rounds = n < 2 ? 0 : (n % 2 == 0 ? n - 1 : n);
    EXPECT_EQ(rounds.size(), expected_rounds);
    std::set<std::pair<std::uint32_t, std::uint32_t>> covered;
    for (const PairRound& round : rounds) {
      std::set<std::uint32_t> busy;
      EXPECT_EQ(round.size(), n / 2);  // an odd count leaves exactly one node out
      for (const NodePair& p : round) {
        EXPECT_LT(p.first, p.second);
        EXPECT_LT(p.second, n);
        EXPECT_TRUE(busy.insert(p.first).second) << "node " << p.first << " twice in a round";
        EXPECT_TRUE(busy.insert(p.second).second) << "node " << p.second << " twice in a round";
        EXPECT_TRUE(covered.insert({p.first, p.second}).second) << "pair measured twice";
      }
    }
    EXPECT_EQ(covered.size(), static_cast<std::size_t>(n) * (n > 0 ? n - 1 : 0) / 2);
  }
}

TEST(PairRounds, MaxRoundsKeepsTheFirstRounds) {
  const auto all = pair_rounds(10);
  const auto two = pair_rounds(10, 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0], all[0]);
  EXPECT_EQ(two[1], all[1]);
  EXPECT_EQ(pair_rounds(4, 99).size(), 3u);
  // Four nodes: the circle method's rounds, spelled out.
  const std::vector<PairRound> four = {{{0, 3}, {1, 2}}, {{0, 2}, {1, 3}}, {{0, 1}, {2, 3}}};
  EXPECT_EQ(pair_rounds(4), four);
}

// Results for `n` nodes where every pair has `fast` Gbit/s except those touching `slow_node`.
std::vector<PairResult> results(std::uint32_t n, int slow_node, std::optional<double> slow,
                                double fast = 9.4) {
  std::vector<PairResult> out;
  for (const auto& round : pair_rounds(n)) {
    for (const NodePair& p : round) {
      const bool touches =
          static_cast<int>(p.first) == slow_node || static_cast<int>(p.second) == slow_node;
      out.push_back({p, touches ? slow : std::optional<double>(fast), 50.0});
    }
  }
  return out;
}

TEST(JudgePairs, NamesTheNodesBelowTheThreshold) {
  struct Case {
    const char* name;
    std::uint32_t nodes;
    int slow_node;
    std::optional<double> slow;
    double threshold;
    std::vector<std::uint32_t> named;
    bool undecided;
  };
  const Case cases[] = {
      {"one slow node of four", 4, 2, 0.9, 0.5, {2}, false},
      {"one slow node of three", 3, 0, 0.9, 0.5, {0}, false},
      {"a node no pair could measure", 3, 1, std::nullopt, 0.5, {1}, false},
      {"slow, but above a lower threshold", 4, 3, 4.0, 0.4, {}, false},
      {"slow and below a higher threshold", 4, 3, 4.0, 0.5, {3}, false},
      {"all healthy", 5, -1, std::nullopt, 0.5, {}, false},
      {"two nodes cannot tell which is slow", 2, 1, 0.9, 0.5, {}, true},
      {"one node of four unmeasured", 4, 0, std::nullopt, 0.5, {0}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    PairVerdict v = judge_pairs(c.nodes, results(c.nodes, c.slow_node, c.slow), c.threshold);
    EXPECT_EQ(v.slow, c.named);
    EXPECT_EQ(v.undecided.has_value(), c.undecided);
  }
}

TEST(JudgePairs, NothingMeasuredIsNoVerdictOnANode) {
  std::vector<PairResult> none;
  for (const auto& round : pair_rounds(4)) {
    for (const NodePair& p : round) none.push_back({p, std::nullopt, std::nullopt});
  }
  PairVerdict v = judge_pairs(4, none, 0.5);
  EXPECT_TRUE(v.slow.empty());
  ASSERT_TRUE(v.undecided);
  EXPECT_EQ(*v.undecided, "no bandwidth measured for half of the nodes or more");
}

TEST(JudgePairs, ASilentNodeNeverMakesItsPartnerSlow) {
  // Node 3 hung: its pairs were never measured. Were its pairs counted, node 0 (whose only
  // other pairs are with nodes that are slow to it here) would score low and be named.
  std::vector<PairResult> r;
  for (const auto& round : pair_rounds(4)) {
    for (const NodePair& p : round) {
      const bool silent_side = p.first == 3 || p.second == 3;
      r.push_back({p, silent_side ? std::nullopt : std::optional<double>(9.4), 50.0});
    }
  }
  const PairVerdict v = judge_pairs(4, r, 0.5, {false, false, false, true});
  EXPECT_TRUE(v.slow.empty());
  EXPECT_EQ(v.silent, (std::vector<std::uint32_t>{3}));
  EXPECT_EQ(v.scored, (std::vector<bool>{true, true, true, false}));
  EXPECT_DOUBLE_EQ(v.median, 9.4);
  // The same results without the silence: node 3 is named slow, as a node no pair reached.
  EXPECT_EQ(judge_pairs(4, r, 0.5).slow, (std::vector<std::uint32_t>{3}));
}

TEST(JudgePairs, TwoNodesWithOneSilentNameNoneSlow) {
  const std::vector<PairResult> r = {{{0, 1}, std::nullopt, std::nullopt}};
  const PairVerdict v = judge_pairs(2, r, 0.5, {false, true});
  EXPECT_TRUE(v.slow.empty());
  EXPECT_TRUE(v.undecided);
  EXPECT_EQ(v.silent, (std::vector<std::uint32_t>{1}));
}

TEST(JudgePairs, ANodeThatSatOutIsNotNamed) {
  // Five nodes, one round: one node sits it out, has no figure, and is not named.
  const auto rounds = pair_rounds(5, 1);
  ASSERT_EQ(rounds.size(), 1u);
  std::vector<PairResult> r;
  std::vector<bool> met(5, false);
  for (const NodePair& p : rounds[0]) {
    r.push_back({p, 9.4, 50.0});
    met[p.first] = met[p.second] = true;
  }
  const auto out =
      static_cast<std::uint32_t>(std::find(met.begin(), met.end(), false) - met.begin());
  ASSERT_LT(out, 5u);
  const PairVerdict v = judge_pairs(5, r, 0.5);
  EXPECT_TRUE(v.slow.empty());
  EXPECT_FALSE(v.scored[out]);
  EXPECT_DOUBLE_EQ(v.median, 9.4);
  // Three nodes, one round: two measured nodes cannot tell which is slow.
  EXPECT_TRUE(judge_pairs(3, {{{0, 2}, 0.5, 50.0}}, 0.5).undecided);
}

TEST(JudgePairs, TheBestPairIsANodesFigure) {
  // Node 2 is slow: its pairs carry 1 Gbit/s; the others' best pair is 10 Gbit/s.
  PairVerdict v = judge_pairs(3, results(3, 2, 1.0, 10.0), 0.5);
  EXPECT_EQ(v.node_bandwidth, (std::vector<double>{10.0, 10.0, 1.0}));
  EXPECT_DOUBLE_EQ(v.median, 10.0);
}

TEST(PairTable, ShowsEveryPairAndNamesTheSlow) {
  const std::vector<std::string> hosts = {"node01", "node02", "node03"};
  const auto r = results(3, 2, 1.0, 10.0);
  PairVerdict v = judge_pairs(3, r, 0.5);
  EXPECT_EQ(render_pair_table(hosts, r, v, tcp_metric()),
            "pairs: bandwidth in Gbit/s (the slower direction)\n"
            "node            0     1     2  best\n"
            "   0 node01     -  10.0   1.0  10.0\n"
            "   1 node02  10.0     -   1.0  10.0\n"
            "   2 node03   1.0   1.0     -  1.0 SLOW\n"
            "pairs: round trip in microseconds\n"
            "node            0     1     2  \n"
            "   0 node01     -  50.0  50.0  \n"
            "   1 node02  50.0     -  50.0  \n"
            "   2 node03  50.0  50.0     -  \n");
  EXPECT_EQ(describe_pairs(hosts, v, 0.5, tcp_metric()),
            "slow: node03 (1.0 Gbit/s); median 10.0 Gbit/s, threshold 0.5 x median");
  EXPECT_EQ(slow_evidence(v, 2, tcp_metric()), "best pair 1.00 Gbit/s, median 10.00 Gbit/s");
  EXPECT_EQ(describe_pairs(hosts, judge_pairs(3, results(3, -1, 1.0), 0.5), 0.5, tcp_metric()),
            "no slow node (median 9.4 Gbit/s, threshold 0.5 x median)");
  EXPECT_EQ(describe_pairs({"a", "b"}, judge_pairs(2, results(2, 1, 1.0), 0.5), 0.5, tcp_metric()),
            "no slow node named: fewer than 3 nodes: a slow pair does not tell which of its nodes "
            "is slow");
}

TEST(PairTable, NcclInGigabytesWithoutRoundTrips) {
  const std::vector<std::string> hosts = {"gpu1", "gpu2", "gpu3", "gpu4"};
  std::vector<PairResult> r;
  for (const auto& round : pair_rounds(4)) {
    for (const NodePair& p : round) {
      // gpu4's pairs are slow; the pair gpu1-gpu2 could not be measured.
      std::optional<double> bw = p.second == 3 ? 2.5 : 23.75;
      if (p == NodePair{0, 1}) bw = std::nullopt;
      r.push_back({p, bw, std::nullopt});
    }
  }
  const PairVerdict v = judge_pairs(4, r, 0.5);
  EXPECT_EQ(v.slow, (std::vector<std::uint32_t>{3}));
  EXPECT_EQ(render_pair_table(hosts, r, v, nccl_metric()),
            "pairs: NCCL send/recv in GB/s (the slower side)\n"
            "node          0     1     2     3  best\n"
            "   0 gpu1     -     -  23.8   2.5  23.8\n"
            "   1 gpu2     -     -  23.8   2.5  23.8\n"
            "   2 gpu3  23.8  23.8     -   2.5  23.8\n"
            "   3 gpu4   2.5   2.5   2.5     -  2.5 SLOW\n");
  EXPECT_EQ(describe_pairs(hosts, v, 0.5, nccl_metric()),
            "slow: gpu4 (2.5 GB/s); median 23.8 GB/s, threshold 0.5 x median");
  EXPECT_EQ(slow_evidence(v, 3, nccl_metric()),
            "NCCL send/recv: best pair 2.50 GB/s, median 23.75 GB/s");
}

TEST(PairsHeader, SaysWhetherNcclRuns) {
  EXPECT_EQ(pairs_header(3, 3, 3, 0.3, 1024, std::nullopt),
            "pairs: 3 nodes, 3 rounds, 0.30 s per direction; then NCCL send/recv, 1024 bytes each "
            "way");
  EXPECT_EQ(
      pairs_header(2, 1, 1, 0.5, 1024, "no GPU visible"),
      "pairs: 2 nodes, 1 round, 0.50 s per direction; NCCL send/recv skipped: no GPU visible");
}

TEST(PairsHeader, SaysWhenOnlyTheFirstRoundsRun) {
  EXPECT_EQ(pairs_header(2000, 10, pair_rounds(2000).size(), 0.5, 1024, "--no-nccl"),
            "pairs: 2000 nodes, 10 of 1999 rounds (each node meets 10 others), 0.50 s per "
            "direction; NCCL send/recv skipped: --no-nccl");
}

// The first rounds of a large step: every node in each, never twice with one peer.
TEST(PairRounds, TheFirstRoundsGiveEveryNodeDistinctPeers) {
  const auto rounds = pair_rounds(2000, 10);
  ASSERT_EQ(rounds.size(), 10u);
  std::vector<std::set<std::uint32_t>> peers(2000);
  for (const PairRound& round : rounds) {
    EXPECT_EQ(round.size(), 1000u);
    for (const NodePair& p : round) {
      peers[p.first].insert(p.second);
      peers[p.second].insert(p.first);
    }
  }
  for (const auto& met : peers) EXPECT_EQ(met.size(), 10u);
}

// Above 32 nodes the table lists the lowest nodes, the slow ones always, instead of a matrix
// nobody could read (2,000 x 2,000 cells).
TEST(PairTable, ALargeStepListsItsLowestNodes) {
  const std::uint32_t n = 40;
  std::vector<std::string> hosts;
  for (std::uint32_t i = 0; i < n; ++i) hosts.push_back("n" + std::to_string(i));
  std::vector<PairResult> results;
  for (const PairRound& round : pair_rounds(n, 3)) {
    for (const NodePair& p : round) {
      const bool slow = p.first == 7 || p.second == 7;
      results.push_back({p, slow ? 1.0 : 10.0 + p.first % 5, 20.0});
    }
  }
  const PairVerdict v = judge_pairs(n, results, 0.5);
  ASSERT_EQ(v.slow, std::vector<std::uint32_t>{7});
  const std::string table = render_pair_table(hosts, results, v, tcp_metric());
  const auto first_line = table.substr(0, table.find('\n'));
  EXPECT_EQ(first_line,
            "pairs: bandwidth in Gbit/s (the slower direction): the 10 lowest of 40 nodes (best "
            "pair, pairs measured, median round trip)");
  EXPECT_NE(table.find("\n  n7 1.0 Gbit/s, 3 of 3, 20.0 us SLOW\n"), std::string::npos) << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 11);
  EXPECT_EQ(table.find(" -     -"), std::string::npos) << "no matrix above 32 nodes";
}

// ddpgen's heal preflight runs ddp-check under ddp-watch --timeout of the check's timeout
// + 30 s: with the default seconds per direction, no wait between two lines may reach that.
TEST(PairsProgress, NoSilenceReachesTheHealPreflightsMargin) {
  EXPECT_EQ(pairs_longest_silence_s(0.5, false), 10);
  EXPECT_EQ(pairs_longest_silence_s(0.5, true), 25);
  EXPECT_EQ(pairs_longest_silence_s(10, false), 28);
  EXPECT_LT(pairs_longest_silence_s(0.5, true), 30);
}

TEST(PairsProgress, OneLinePerRoundNamesTheMeasurement) {
  EXPECT_EQ(round_done(tcp_metric(), 3, 15), "pairs: round 3 of 15 done");
  EXPECT_EQ(round_done(nccl_metric(), 1, 1), "pairs: NCCL send/recv: round 1 of 1 done");
}

}  // namespace
}  // namespace ddp::check
