// What ddp-check's main prints: the interface advice, --topology's socket_ifname lines, why
// the NCCL phase is skipped and the OK line, decided by the core from plain values.
#include <gtest/gtest.h>

#include "ddp-check/rendezvous/report.hpp"

namespace ddp::check {
namespace {

Hello on(std::string host, std::string ifname, std::uint32_t rank, bool nccl = true) {
  Hello h;
  h.rank = rank;
  h.host = std::move(host);
  h.ifname = std::move(ifname);
  h.nccl_ready = nccl;
  return h;
}

TEST(Report, IfnameAdviceIsWhatTheRanksRouteThrough) {
  EXPECT_EQ(ifname_advice({on("a", "ib0", 0), on("b", "ib0", 1), on("c", "?", 2)}),
            "socket_ifname=auto sets NCCL_SOCKET_IFNAME==ib0 GLOO_SOCKET_IFNAME=ib0");
  EXPECT_EQ(
      ifname_advice({on("a", "ib0", 0), on("b", "eth0", 1)}),
      "nodes reach rank 0 through different interfaces: =eth0 =ib0 (`auto` chooses per node)");
}

// Without a destination, --topology does not pretend to know what `auto` sets: the plugin
// follows the route to MASTER_ADDR, not the interface kind.
TEST(Report, TopologyNamesWhatAutoSetsOnlyForARoute) {
  const Result<EnvList> none = EnvList{};
  const Result<std::string> ib = std::string("=ib0");
  EXPECT_EQ(topology_ifname_lines(std::nullopt, none, ib),
            "socket_ifname=auto follows the route to MASTER_ADDR: give --route-to HOST (or set "
            "MASTER_ADDR) to see what it sets on this node\n"
            "interface by kind, for NCCL_SOCKET_IFNAME by hand: =ib0\n");
  const Result<EnvList> eth =
      EnvList{{"NCCL_SOCKET_IFNAME", "=eth0"}, {"GLOO_SOCKET_IFNAME", "eth0"}};
  EXPECT_EQ(topology_ifname_lines(std::string("head"), eth, ib),
            "socket_ifname=auto sets NCCL_SOCKET_IFNAME==eth0 GLOO_SOCKET_IFNAME=eth0 (route to "
            "\"head\")\n"
            "interface by kind, for NCCL_SOCKET_IFNAME by hand: =ib0\n");
  const Result<EnvList> refused = fail("no route");
  const Result<std::string> nothing = fail("no socket interface");
  EXPECT_EQ(topology_ifname_lines(std::string("x\n"), refused, nothing),
            "socket_ifname=auto sets nothing for \"x\\x0a\", the step fails: no route\n"
            "interface by kind, for NCCL_SOCKET_IFNAME by hand: none (no socket interface)\n");
}

TEST(Report, NcclSkipReasons) {
  const std::vector<Hello> ready = {on("a", "ib0", 0), on("b", "ib0", 1)};
  EXPECT_EQ(nccl_skip_reason(false, Scope::ranks, std::nullopt, ready), "--no-nccl");
  EXPECT_EQ(nccl_skip_reason(true, Scope::nodes, std::nullopt, ready),
            "torchrun mode (a launcher is not a rank)");
  EXPECT_EQ(nccl_skip_reason(true, Scope::ranks, std::string("no NVIDIA driver"), ready),
            "no NVIDIA driver");
  EXPECT_EQ(nccl_skip_reason(true, Scope::ranks, std::nullopt,
                             {on("a", "ib0", 0), on("b", "ib0", 1, false)}),
            "rank 1 on b has no GPU or no NCCL");
  EXPECT_EQ(nccl_skip_reason(true, Scope::ranks, std::nullopt, ready), std::nullopt);
}

Identity rank0() {
  Identity id;
  id.self.rank = 0;
  id.self.world_size = 1;
  id.self.host = "node01";
  id.self.pid = 7;
  return id;
}

// Rank 0 unable to reach itself comes first; connections it refused explain a missing rank
// only when something is wrong, each described once and the rest counted.
TEST(Report, JudgeAndTheLinesItPrints) {
  const Identity id = rank0();
  Exchange ex;
  ex.hellos = {id.self};
  ex.refused = {"refused a connection from 10.0.0.9: not a ddp-check/2 hello: \"x\""};
  ex.refused_count = 3;
  EXPECT_TRUE(judge(ex, id.self, Scope::ranks).ok());  // refusals alone are no fault
  ex.self_unreachable = "rank 0 (node01) cannot reach itself";
  ex.accept_trouble = "accepting connections failed";
  const WorldReport report = judge(ex, id.self, Scope::ranks);
  ASSERT_EQ(report.faults.size(), 3u);
  EXPECT_EQ(report.faults[0], "rank 0 (node01) cannot reach itself");
  EXPECT_EQ(report.faults[1],
            "3 connections refused, not counted: refused a connection from 10.0.0.9: not a "
            "ddp-check/2 hello: \"x\"; ...");
  EXPECT_EQ(report.faults[2], "rank 0: accepting connections failed");
  EXPECT_EQ(failed_line(report, id), "FAILED: 3 faults found by rank 0 (node01)");
  EXPECT_EQ(refusal_lines(ex),
            (std::vector<std::string>{"REFUSED: " + ex.refused[0], "REFUSED: 2 more connections"}));
  Identity node = id;
  node.scope = Scope::nodes;
  EXPECT_EQ(who(node), "node 0 (node01)");
}

TEST(Report, OkLine) {
  EXPECT_EQ(ok_line(6, Scope::ranks, 3, "10.0.0.1:29500", 0.0604),
            "ddp-check: OK: 6 ranks on 3 nodes reached 10.0.0.1:29500 in 0.060 s");
  EXPECT_EQ(ok_line(1, Scope::nodes, 1, "h:1", 12.5),
            "ddp-check: OK: 1 node launcher on 1 node reached h:1 in 12.500 s");
}

}  // namespace
}  // namespace ddp::check
