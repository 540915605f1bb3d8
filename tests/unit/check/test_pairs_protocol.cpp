// The NCCL lines of the pairwise phase, read back as written and refused when malformed, and
// the decision to run the NCCL pairs.
#include <gtest/gtest.h>

#include "ddp-check/pairs/protocol.hpp"

namespace ddp::check {
namespace {

TEST(AgentHello, RoundTripsWithAndWithoutNccl) {
  EXPECT_EQ(format_agent_hello({"node01", 40123, std::nullopt}), "agent node01 40123 nccl");
  EXPECT_EQ(format_agent_hello({"node02", 9, "no GPU visible"}),
            "agent node02 9 no-nccl no GPU visible");
  // A reason cannot end the line early.
  EXPECT_EQ(format_agent_hello({"n", 9, "a\nb"}), "agent n 9 no-nccl a b");
  auto can = parse_agent_hello("agent node01 40123 nccl");
  ASSERT_TRUE(can);
  EXPECT_EQ(can->node, "node01");
  EXPECT_EQ(can->port, 40123);
  EXPECT_FALSE(can->nccl_unavailable);
  auto cannot = parse_agent_hello("agent node02 9 no-nccl no GPU visible");
  ASSERT_TRUE(cannot);
  EXPECT_EQ(cannot->nccl_unavailable, "no GPU visible");
}

TEST(AgentHello, RefusesMalformedLines) {
  for (const char* line :
       {"", "agent node01 40123", "agent node01 0 nccl", "agent node01 x nccl", "agent  40123 nccl",
        "agent node01 70000 nccl", "agents n 1 nccl", "agent node01 1 nccl extra",
        "agent node01 1 no-nccl", "agent node01 1 maybe"}) {
    SCOPED_TRACE(line);
    EXPECT_FALSE(parse_agent_hello(line));
  }
}

TEST(NcclRequest, RoundTripsAndRefusesMalformed) {
  const std::string line = format_nccl_request({7, 1, "00ff"});
  EXPECT_EQ(line, "nccl-pair 7 1 00ff");
  auto r = parse_nccl_request(line);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->tag, 7u);
  EXPECT_EQ(r->rank, 1);
  EXPECT_EQ(r->id_hex, "00ff");
  for (const char* bad :
       {"nccl-pair 7 2 00ff", "nccl-pair 7 1 0g", "nccl-pair 7 1 abc", "nccl-pair x 1 00",
        "nccl-pair 7 1", "nccl-pair 7 1 00 00", "nccl-pair 7 1 "}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(parse_nccl_request(bad));
  }
}

TEST(NcclAnswer, AFigureOrAReason) {
  EXPECT_EQ(format_nccl_answer({3, 23.5, ""}), "nccl-result 3 23.5000");
  EXPECT_EQ(format_nccl_answer({3, std::nullopt, "ncclCommInitRankConfig: timed out"}),
            "nccl-result 3 - ncclCommInitRankConfig: timed out");
  auto ok = parse_nccl_answer("nccl-result 3 23.5000");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->tag, 3u);
  EXPECT_DOUBLE_EQ(ok->gb_s.value_or(-1), 23.5);
  auto failed = parse_nccl_answer("nccl-result 4 - send/recv: did not finish in time");
  ASSERT_TRUE(failed);
  EXPECT_FALSE(failed->gb_s);
  EXPECT_EQ(failed->why, "send/recv: did not finish in time");
  for (const char* bad :
       {"nccl-result 3", "nccl-result 3 -1", "nccl-result 3 1e99", "nccl-result 3 nan",
        "nccl-result x 1", "nccl-result 3 1 2", "result 3 1"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(parse_nccl_answer(bad));
  }
}

TEST(NcclPairsSkip, RunsOnlyWhenEveryRegisteredNodeCan) {
  const std::string no_gpu = "no GPU visible";
  const std::string unbuilt = "ddp-check was built without NCCL";
  struct Case {
    const char* name;
    bool option;
    std::vector<AgentNccl> agents;
    std::optional<std::string> skip;
  };
  const Case cases[] = {
      {"every node can", true, {{"a", {}}, {"b", {}}, {"c", {}}}, std::nullopt},
      {"--no-nccl", false, {{"a", {}}, {"b", {}}}, "--no-nccl"},
      {"one node", true, {{"a", {}}}, "fewer than 2 nodes joined the pairwise test"},
      {"no node can, one reason", true, {{"a", unbuilt}, {"b", unbuilt}}, unbuilt},
      {"one node cannot", true, {{"a", {}}, {"b", no_gpu}, {"c", {}}}, "no GPU visible on b"},
      {"two reasons",
       true,
       {{"a", no_gpu}, {"b", unbuilt}, {"c", no_gpu}},
       "no GPU visible on a, c; ddp-check was built without NCCL on b"},
      {"a hostile name is shown escaped",
       true,
       {{"a\x1b", no_gpu}, {"b", {}}},
       "no GPU visible on a\\x1b"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(nccl_pairs_skip(c.option, c.agents), c.skip);
  }
}

}  // namespace
}  // namespace ddp::check
