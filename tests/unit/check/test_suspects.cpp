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
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].node, "node03");
  EXPECT_EQ(one[0].fault, Fault::missing_rank);
  EXPECT_EQ(one[0].evidence, "no rank on node03 reached rank 0 on node01");
  // Half or more silent: the head is the likelier culprit.
  auto most = world_suspects(nodes, std::vector<Hello>{from("node01"), from("node02")}, "node01");
  ASSERT_EQ(most.size(), 1u);
  EXPECT_EQ(most[0].node, "node01");
  EXPECT_EQ(most[0].fault, Fault::unreachable);
  EXPECT_EQ(most[0].evidence, "2 of the step's 4 nodes sent rank 0 on node01 no hello");
  EXPECT_TRUE(
      world_suspects(
          nodes, std::vector<Hello>{from("node01"), from("node02"), from("node03"), from("node04")},
          "node01")
          .empty());
}

}  // namespace
}  // namespace ddp::check
