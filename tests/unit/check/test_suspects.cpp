// The step's nodes rank 0 heard nothing from.
#include <gtest/gtest.h>

#include "ddp-check/rendezvous/suspects.hpp"

namespace ddp::check {
namespace {

Hello from(const std::string& host) {
  Hello h;
  h.host = host;
  return h;
}

TEST(SameNode, ComparesThePartBeforeTheFirstDot) {
  EXPECT_TRUE(same_node("node01", "node01"));
  EXPECT_TRUE(same_node("node01", "node01.cluster"));
  EXPECT_TRUE(same_node("node01.a", "node01.b"));
  EXPECT_FALSE(same_node("node01", "node010"));
  EXPECT_FALSE(same_node("node01", "node02.cluster"));
  EXPECT_FALSE(same_node("", "node01"));
}

TEST(SilentNodes, TheNodesNoHelloCameFrom) {
  const std::vector<std::string> nodes = {"node01", "node02", "node03"};
  const std::vector<Hello> two = {from("node01"), from("node01"), from("node03")};
  EXPECT_EQ(silent_nodes(nodes, two), std::vector<std::string>{"node02"});
  EXPECT_TRUE(silent_nodes(
                  nodes, std::vector<Hello>{from("node01"), from("node02.cluster"), from("node03")})
                  .empty());
  EXPECT_EQ(silent_nodes({"n1.example", "n2.example"}, std::vector<Hello>{from("n1")}),
            std::vector<std::string>{"n2.example"});
  EXPECT_EQ(silent_nodes(nodes, std::vector<Hello>{}), nodes);
  EXPECT_TRUE(silent_nodes({}, two).empty());
}

TEST(WorldSuspects, TheSilentFewOrTheHead) {
  const std::vector<std::string> nodes = {"node01", "node02", "node03", "node04"};
  auto one = world_suspects(
      nodes, std::vector<Hello>{from("node01"), from("node02"), from("node04")}, "node01");
  ASSERT_EQ(one.suspects.size(), 1u);
  EXPECT_EQ(one.suspects[0].node, "node03");
  EXPECT_EQ(one.suspects[0].fault, Fault::missing_rank);
  EXPECT_EQ(one.suspects[0].evidence, "no rank on node03 reached rank 0 on node01");
  EXPECT_EQ(one.none_why, "");
  // More than half silent: the head is the likelier culprit.
  auto most = world_suspects(nodes, std::vector<Hello>{from("node01")}, "node01");
  ASSERT_EQ(most.suspects.size(), 1u);
  EXPECT_EQ(most.suspects[0].node, "node01");
  EXPECT_EQ(most.suspects[0].fault, Fault::unreachable);
  EXPECT_EQ(most.suspects[0].evidence, "3 of the step's 4 nodes sent rank 0 on node01 no hello");
  EXPECT_EQ(most.none_why, "");
  auto healthy = world_suspects(
      nodes, std::vector<Hello>{from("node01"), from("node02"), from("node03"), from("node04")},
      "node01");
  EXPECT_TRUE(healthy.suspects.empty());
  EXPECT_EQ(healthy.none_why, "");
}

// Exactly half silent: either side may be at fault, so nobody is named, and the reason is said.
TEST(WorldSuspects, AsManySilentAsAnsweringNamesNobody) {
  const std::string why =
      ": with as many silent nodes as answering ones, the fault may lie on either side";
  auto two = world_suspects({"node01", "node02"}, std::vector<Hello>{from("node01")}, "node01");
  EXPECT_TRUE(two.suspects.empty());
  EXPECT_EQ(two.none_why, "1 of the step's 2 nodes sent rank 0 on node01 no hello" + why);
  auto four = world_suspects({"node01", "node02", "node03", "node04"},
                             std::vector<Hello>{from("node01"), from("node02")}, "node01");
  EXPECT_TRUE(four.suspects.empty());
  EXPECT_EQ(four.none_why, "2 of the step's 4 nodes sent rank 0 on node01 no hello" + why);
}

}  // namespace
}  // namespace ddp::check
