// Rank 0's verdict: one case per fault, each asserting the exact diagnosis.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ddp-check/rendezvous/verify.hpp"

namespace ddp::check {
namespace {

Hello rank(std::uint32_t r, std::uint32_t world, std::uint32_t local, std::uint32_t lws,
           std::uint32_t node, std::uint32_t nnodes, std::string host) {
  Hello h;
  h.rank = r;
  h.world_size = world;
  h.local_rank = local;
  h.local_world_size = lws;
  h.node_rank = node;
  h.nnodes = nnodes;
  h.host = std::move(host);
  h.pid = 100 + r;
  h.gpus = std::to_string(local);
  h.ifname = "ib0";
  h.if_kind = "infiniband";
  h.address = "10.0.0." + std::to_string(node + 1);
  return h;
}

// A healthy block-distributed world: `nodes` nodes of `per_node` ranks.
std::vector<Hello> world(std::uint32_t nodes, std::uint32_t per_node) {
  std::vector<Hello> out;
  for (std::uint32_t n = 0; n < nodes; ++n) {
    for (std::uint32_t l = 0; l < per_node; ++l) {
      out.push_back(rank(n * per_node + l, nodes * per_node, l, per_node, n, nodes,
                         "node" + std::to_string(n)));
    }
  }
  return out;
}

std::vector<Hello> without(std::vector<Hello> hellos, std::uint32_t r) {
  std::erase_if(hellos, [r](const Hello& h) { return h.rank == r; });
  return hellos;
}

template <class Edit>
std::vector<Hello> edited(std::vector<Hello> hellos, std::uint32_t r, Edit edit) {
  for (auto& h : hellos) {
    if (h.rank == r) edit(h);
  }
  return hellos;
}

TEST(VerifyWorld, NamesEveryFault) {
  struct Case {
    std::string name;
    std::vector<Hello> hellos;
    std::vector<std::string> faults;
  };
  const Case cases[] = {
      {"healthy 3x2", world(3, 2), {}},
      {"healthy 1x1", world(1, 1), {}},
      {"missing rank, node and block position known",
       without(world(2, 3), 4),
       {"missing RANK 4 (WORLD_SIZE=6, 5 distinct arrived): node 1 (node1) lacks LOCAL_RANK 1 "
        "of LOCAL_WORLD_SIZE=3 (RANK 4)"}},
      {"missing whole node",
       without(without(world(3, 2), 4), 5),
       {"missing RANK 4,5 (WORLD_SIZE=6, 4 distinct arrived): node 2 sent no rank at all"}},
      {"duplicate rank from two hosts",
       edited(world(2, 2), 3, [](Hello& h) { h.rank = 1; }),
       {"duplicate RANK 1 from node0 (pid 101), node1 (pid 103)",
        "missing RANK 3 (WORLD_SIZE=4, 3 distinct arrived)"}},
      {"inconsistent WORLD_SIZE",
       edited(world(2, 2), 3, [](Hello& h) { h.world_size = 6; }),
       {"inconsistent WORLD_SIZE: ranks 0-2 (node[0-1]) say 4, rank 3 (node1) says 6"}},
      {"rank out of range",
       edited(world(2, 2), 3, [](Hello& h) { h.rank = 9; }),
       {"RANK 9 from node1 is out of range for WORLD_SIZE=4",
        "missing RANK 3 (WORLD_SIZE=4, 3 distinct arrived)"}},
      {"inconsistent LOCAL_WORLD_SIZE",
       edited(world(2, 2), 1, [](Hello& h) { h.local_world_size = 3; }),
       {"inconsistent LOCAL_WORLD_SIZE on node 0 (node0): rank 0 (node0) says 2, rank 1 "
        "(node0) says 3"}},
      {"duplicate LOCAL_RANK",
       edited(world(2, 2), 1, [](Hello& h) { h.local_rank = 0; }),
       {"duplicate LOCAL_RANK 0 on node 0 (node0): RANK 0,1"}},
      {"two hosts claim one node",
       edited(world(2, 2), 1, [](Hello& h) { h.host = "intruder"; }),
       {"NODE_RANK 0 claimed by hosts intruder,node0"}},
      {"one host reports two nodes",
       edited(world(2, 2), 3, [](Hello& h) { h.host = "node0"; }),
       {"NODE_RANK 1 claimed by hosts node[0-1]", "host node0 reports NODE_RANK 0,1"}},
      {"inconsistent NNODES",
       edited(world(2, 2), 0, [](Hello& h) { h.nnodes = 3; }),
       {"inconsistent NNODES: ranks 1-3 (node[0-1]) say 2, rank 0 (node0) says 3"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const Hello expected = c.hellos.front().rank == 0 ? c.hellos.front() : world(1, 1)[0];
    auto report = verify_world(c.hellos, expected, Scope::ranks);
    EXPECT_EQ(report.faults, c.faults);
    EXPECT_EQ(report.ok(), c.faults.empty());
  }
}

TEST(VerifyWorld, NodeListsStayOneShortLineAt256Nodes) {
  // Every rank of 256 nodes claims NODE_RANK 0: each fault names the hosts as one hostlist.
  auto hellos = world(256, 1);
  for (auto& h : hellos) h.node_rank = 0;
  auto report = verify_world(hellos, hellos[0], Scope::ranks);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.faults.front(), "NODE_RANK 0 claimed by hosts node[0-255]");
  for (const std::string& fault : report.faults) EXPECT_LT(fault.size(), 300u) << fault;
  auto table = render_table(hellos, Scope::ranks);
  EXPECT_NE(table.find("\n0     node[0-255]  0-255"), std::string::npos) << table.substr(0, 300);

  // Five processes with one RANK: a count and a hostlist instead of five host (pid) pairs.
  auto dup = world(5, 1);
  for (auto& h : dup) h.rank = h.rank == 0 ? 0 : 1;
  report = verify_world(dup, dup[0], Scope::ranks);
  ASSERT_FALSE(report.faults.empty());
  EXPECT_EQ(report.faults.front(), "duplicate RANK 1 from 4 processes on node[1-4]");
}

TEST(VerifyWorld, RankZeroOwnViewVotesOnSizes) {
  // Rank 0 could not reach itself: its WORLD_SIZE still counts, and it is missing.
  auto hellos = without(world(1, 2), 0);
  Hello self = rank(0, 3, 0, 2, 0, 1, "node0");
  auto report = verify_world(hellos, self, Scope::ranks);
  ASSERT_EQ(report.faults.size(), 2u);
  EXPECT_EQ(report.faults[0],
            "inconsistent WORLD_SIZE: rank 1 (node0) says 2, rank 0 (node0) says 3");
  EXPECT_EQ(report.faults[1].rfind("missing RANK 0,2 (WORLD_SIZE=3, 1 distinct arrived)", 0), 0u)
      << report.faults[1];
}

TEST(VerifyWorld, LocalSizesMustAddUpToWorld) {
  // Every rank 0..4 arrived and all agree on the sizes, but node 2 claims 2 local ranks and
  // has one: the LOCAL_WORLD_SIZEs add up to 6, not WORLD_SIZE=5.
  auto bigger = world(2, 2);
  for (auto& h : bigger) h.world_size = 5;
  bigger.push_back(rank(4, 5, 0, 2, 2, 3, "node2"));
  for (auto& h : bigger) h.nnodes = 3;
  auto report = verify_world(bigger, bigger[0], Scope::ranks);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.faults.back(),
            "LOCAL_WORLD_SIZE over the 3 nodes sums to 6 but WORLD_SIZE is 5");
}

TEST(VerifyWorld, TorchrunScopeChecksNodes) {
  std::vector<Hello> nodes;
  for (std::uint32_t n = 0; n < 3; ++n) {
    Hello h = rank(n, 3, 0, 1, n, 3, "gpu" + std::to_string(n));
    h.nproc_per_node = 4;
    nodes.push_back(h);
  }
  EXPECT_TRUE(verify_world(nodes, nodes[0], Scope::nodes).ok());
  auto missing = verify_world(without(nodes, 1), nodes[0], Scope::nodes);
  ASSERT_EQ(missing.faults.size(), 1u);
  EXPECT_EQ(missing.faults[0],
            "missing NODE_RANK 1 (NNODES=3, 2 distinct arrived): node 1 sent no rank at all");
  auto odd = edited(nodes, 2, [](Hello& h) { h.nproc_per_node = 2; });
  EXPECT_EQ(verify_world(odd, odd[0], Scope::nodes).faults,
            std::vector<std::string>{
                "inconsistent NPROC_PER_NODE: node 2 (gpu2) says 2, nodes 0,1 (gpu[0-1]) say 4"});
}

TEST(RenderTable, OneRowPerNode) {
  auto hellos = world(2, 3);
  EXPECT_EQ(render_table(hellos, Scope::ranks),
            "NODE  HOST   RANKS  LOCAL RANKS  GPUS   INTERFACE         ADDRESS\n"
            "0     node0  0-2    0-2          0,1,2  ib0 (infiniband)  10.0.0.1\n"
            "1     node1  3-5    0-2          0,1,2  ib0 (infiniband)  10.0.0.2\n");
  hellos.resize(1);
  hellos[0].nproc_per_node = 8;
  hellos[0].gpus = "n=8";
  EXPECT_EQ(render_table(hellos, Scope::nodes),
            "NODE  HOST   RANKS  LOCAL RANKS  GPUS  INTERFACE         ADDRESS\n"
            "0     node0  0-7    0-7          n=8   ib0 (infiniband)  10.0.0.1\n");
}

TEST(FormatRanges, CompressesRuns) {
  EXPECT_EQ(format_ranges({}), "");
  EXPECT_EQ(format_ranges({3}), "3");
  EXPECT_EQ(format_ranges({5, 0, 1, 2, 7, 8, 2}), "0-2,5,7,8");
  EXPECT_EQ(format_ranges({9, 10, 11, 12}), "9-12");
}

}  // namespace
}  // namespace ddp::check
