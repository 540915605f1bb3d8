// The NCCL lines of the pairwise phase, read back as written and refused when malformed, and
// the decision to run the NCCL pairs.
#include <gtest/gtest.h>

#include "ddp-check/pairs/protocol.hpp"

namespace ddp::check {
namespace {

AgentHello hello_of(std::string node, std::uint16_t port, std::optional<std::string> why) {
  AgentHello h{std::move(node), port, std::move(why)};
  h.job = "100";
  h.step = "0";
  h.master_port = 29500;
  h.cred = "MUNGE:abc:";
  return h;
}

TEST(AgentHello, RoundTripsWithAndWithoutNccl) {
  EXPECT_EQ(format_agent_hello(hello_of("node01", 40123, std::nullopt)),
            "agent node01 40123 100 0 29500 munge MUNGE:abc: nccl");
  EXPECT_EQ(format_agent_hello(hello_of("node02", 9, "no GPU visible")),
            "agent node02 9 100 0 29500 munge MUNGE:abc: no-nccl no GPU visible");
  // A reason cannot end the line early, a node name cannot split it.
  EXPECT_EQ(format_agent_hello(hello_of("n", 9, "a\nb")),
            "agent n 9 100 0 29500 munge MUNGE:abc: no-nccl a b");
  EXPECT_EQ(format_agent_hello(hello_of("no de", 9, std::nullopt)),
            "agent no\\x20de 9 100 0 29500 munge MUNGE:abc: nccl");
  auto can = parse_agent_hello("agent node01 40123 100 0 29500 munge MUNGE:abc: nccl");
  ASSERT_TRUE(can);
  EXPECT_EQ(can->node, "node01");
  EXPECT_EQ(can->port, 40123);
  EXPECT_EQ(can->job, "100");
  EXPECT_EQ(can->step, "0");
  EXPECT_EQ(can->master_port, 29500u);
  EXPECT_EQ(can->auth, AuthMode::munge);
  EXPECT_EQ(can->cred, "MUNGE:abc:");
  EXPECT_FALSE(can->nccl_unavailable);
  auto cannot = parse_agent_hello("agent node02 9 100 0 29500 none - no-nccl no GPU visible");
  ASSERT_TRUE(cannot);
  EXPECT_EQ(cannot->auth, AuthMode::none);
  EXPECT_EQ(cannot->nccl_unavailable, "no GPU visible");
}

TEST(AgentHello, TheCredentialSignsEverythingButItself) {
  EXPECT_EQ(agent_signed_part("agent node01 40123 100 0 29500 munge MUNGE:abc: nccl"),
            "agent node01 40123 100 0 29500 munge nccl");
  EXPECT_EQ(agent_signed_part("agent node02 9 100 0 29500 munge - no-nccl no GPU"),
            "agent node02 9 100 0 29500 munge no-nccl no GPU");
  // The name is inside what is signed: a line renamed after signing signs another text.
  EXPECT_NE(agent_signed_part("agent node03 40123 100 0 29500 munge MUNGE:abc: nccl"),
            agent_signed_part("agent node01 40123 100 0 29500 munge MUNGE:abc: nccl"));
  EXPECT_EQ(agent_signed_part("agent node01"), "");
}

TEST(AgentHello, RefusesMalformedLines) {
  for (const char* line :
       {"", "agent node01 40123", "agent node01 40123 nccl",
        "agent node01 0 100 0 29500 munge - nccl", "agent node01 x 100 0 29500 munge - nccl",
        "agent  40123 100 0 29500 munge - nccl", "agent node01 70000 100 0 29500 munge - nccl",
        "agents n 1 100 0 29500 munge - nccl", "agent node01 1 100 0 29500 munge - nccl extra",
        "agent node01 1 100 0 29500 munge - no-nccl", "agent node01 1 100 0 29500 munge - maybe",
        "agent node01 1 100 0 0 munge - nccl", "agent node01 1 100 0 29500 krb5 - nccl",
        "agent node\x01 1 100 0 29500 munge - nccl"}) {
    SCOPED_TRACE(line);
    EXPECT_FALSE(parse_agent_hello(line));
  }
}

TEST(AgentHello, BoundToTheStepAndSignedWhenTheCheckIs) {
  const StepBinding own{"100", "0", "-", 29500};
  AgentHello h = hello_of("node01", 9, std::nullopt);
  EXPECT_FALSE(agent_binding_refusal(h, own, AuthMode::munge));
  h.job = "101";
  EXPECT_EQ(agent_binding_refusal(h, own, AuthMode::munge),
            "its registration belongs to job 101 step 0, this check is job 100 step 0");
  h = hello_of("node01", 9, std::nullopt);
  h.master_port = 29501;
  EXPECT_EQ(agent_binding_refusal(h, own, AuthMode::munge),
            "its registration names MASTER_PORT 29501, this check's is 29500");
  h = hello_of("node01", 9, std::nullopt);
  h.auth = AuthMode::none;
  EXPECT_EQ(agent_binding_refusal(h, own, AuthMode::munge),
            "its registration carries no MUNGE credential, and this check accepts only signed "
            "agents");
  // --auth=none: bound to the step, not authenticated.
  EXPECT_FALSE(agent_binding_refusal(h, own, AuthMode::none));
}

// An agent stands for the node expected at the address it connected from, never for another
// node of the step.
TEST(AgentName, OnlyANodeExpectedAtItsAddress) {
  const std::vector<std::string> one = {"node02"};
  const std::vector<std::string> step = {"node01", "node02", "node03"};
  EXPECT_FALSE(agent_name_refusal("node02", one, step));
  EXPECT_FALSE(agent_name_refusal("node02.cluster", one, step));  // the host's full name
  EXPECT_FALSE(agent_name_refusal("node02", {"node02.cluster"}, {"node02.cluster"}));
  EXPECT_EQ(agent_name_refusal("node03", one, step),
            "it claims node node03, but the step's node at its address is node02");
  EXPECT_EQ(agent_name_refusal("node03.cluster", {"node02.cluster"},
                               {"node02.cluster", "node03.cluster"}),
            "it claims node node03.cluster, but the step's node at its address is node02.cluster");
  // Slurm's NodeName is not the host's name (NodeHostname=ip-10-0-0-12): the address decides.
  EXPECT_FALSE(
      agent_name_refusal("gpu-st-p4d-2", {"ip-10-0-0-12"}, {"ip-10-0-0-11", "ip-10-0-0-12"}));
  // One address for several nodes (loopback): any of them, none other.
  const std::vector<std::string> shared = {"node0", "node1", "node2"};
  EXPECT_FALSE(agent_name_refusal("node1", shared, shared));
  EXPECT_EQ(agent_name_refusal("node3", shared, shared),
            "it claims node node3, but the step's nodes at its address are node0, node1, node2");
  EXPECT_EQ(agent_name_refusal("node0", {}, step), "the step has no node at its address");
}

TEST(PairsPort, StaysInRangeAndNeverWraps) {
  EXPECT_EQ(pairs_port(29500).value(), 29501);
  EXPECT_EQ(pairs_port(1).value(), 2);
  EXPECT_EQ(pairs_port(65534).value(), 65535);
  EXPECT_EQ(pairs_port(65535).value(), 65534);
  EXPECT_EQ(pairs_port(0).error().message,
            "MASTER_PORT 0 is outside 1-65535: the pairwise phase has no port");
  EXPECT_FALSE(pairs_port(65536));
}

TEST(Figures, OnlyFiniteBoundedNonNegative) {
  EXPECT_EQ(bounded_figure("9.4000", k_max_tcp_gbit_s), 9.4);
  EXPECT_EQ(bounded_figure("0", k_max_tcp_gbit_s), 0.0);
  for (const char* bad : {"inf", "-inf", "nan", "NaN", "-1", "-0.5", "1e999", "10001", "", "1x",
                          " 1", "0x10", "infinity"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(bounded_figure(bad, k_max_tcp_gbit_s));
  }
}

TEST(TcpLines, RequestsCarryTheirTagAndNonce) {
  const std::string nonce(32, 'a');
  EXPECT_EQ(format_serve({7, nonce}), "serve 7 " + nonce);
  auto serve = parse_serve("serve 7 " + nonce);
  ASSERT_TRUE(serve);
  EXPECT_EQ(serve->tag, 7u);
  EXPECT_EQ(serve->nonce, nonce);
  EXPECT_EQ(format_measure({8, "10.0.0.2", 40000, nonce}), "measure 8 10.0.0.2 40000 " + nonce);
  auto m = parse_measure("measure 8 10.0.0.2 40000 " + nonce);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->tag, 8u);
  EXPECT_EQ(m->addr, "10.0.0.2");
  EXPECT_EQ(m->port, 40000);
  for (const std::string& bad : std::vector<std::string>{
           "serve", "serve 7", "serve 7 " + std::string(31, 'a'), "serve 7 " + std::string(32, 'A'),
           "serve x " + nonce, "measure 8 10.0.0.2 0 " + nonce, "measure 8 10.0.0.2 40000",
           "measure 8 10.0.0.2 40000 " + nonce + " x"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(parse_serve(bad));
    EXPECT_FALSE(parse_measure(bad));
  }
}

TEST(TcpLines, AnswersAreTaggedAndBounded) {
  EXPECT_EQ(format_tcp_answer({3, 9.4, 51.25, ""}), "result 3 9.4000 51.2");
  EXPECT_EQ(format_tcp_answer({3, std::nullopt, std::nullopt, "cannot\nconnect"}),
            "result 3 - - cannot connect");
  auto ok = parse_tcp_answer("result 3 9.4000 51.2");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->tag, 3u);
  EXPECT_EQ(ok->gbit_s, 9.4);
  EXPECT_EQ(ok->rtt_us, 51.2);
  auto none = parse_tcp_answer("result 4 - - cannot connect to 10.0.0.3");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->gbit_s);
  EXPECT_EQ(none->why, "cannot connect to 10.0.0.3");
  // inf, NaN, negative and absurd figures are refused: the agent has not answered.
  for (const char* bad : {"result 3 inf 50", "result 3 nan 50", "result 3 -1 50",
                          "result 3 1e300 50", "result 3 9.4 inf", "result 3 9.4 -5",
                          "result 3 9.4", "result x 9.4 50", "result 3 9.4 50 extra", "served 3"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(parse_tcp_answer(bad));
  }
  EXPECT_EQ(parse_served("served 5"), std::pair(5u, true));
  EXPECT_EQ(parse_served("not-served 5"), std::pair(5u, false));
  EXPECT_FALSE(parse_served("served"));
  EXPECT_FALSE(parse_served("served 5 6"));
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
  for (const char* bad : {"nccl-result 3", "nccl-result 3 -1", "nccl-result 3 1e99",
                          "nccl-result 3 nan", "nccl-result 3 inf", "nccl-result 3 20000",
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
