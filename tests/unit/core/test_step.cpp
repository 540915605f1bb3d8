// Step decisions: refusals, MASTER_ADDR from what each node learned, the rank-0 node's checks,
// GPU binding and the `srun -v` line, each from plain facts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "libddp/core/step.hpp"

namespace ddp {
namespace {

IpAddress ip(std::string_view text) {
  auto address = IpAddress::parse(text);
  EXPECT_TRUE(address) << text;
  return address.value_or(IpAddress{});
}

// Expects `result` to fail with a message containing `part`, or to succeed when `part` is empty.
template <class T>
void expect_outcome(const Result<T>& result, std::string_view part) {
  if (part.empty()) {
    EXPECT_TRUE(result) << result.error().message;
  } else {
    ASSERT_FALSE(result);
    EXPECT_NE(result.error().message.find(part), std::string::npos) << result.error().message;
  }
}

TEST(PortWindow, MustStayBelowTheEphemeralRange) {
  const PortRange window{20000, 30999};
  expect_outcome(check_port_window(window, PortRange{32768, 60999}), "");
  expect_outcome(check_port_window(window, std::nullopt), "");
  expect_outcome(check_port_window(window, PortRange{30999, 60999}),
                 "port_range=20000-30999 overlaps this node's ephemeral port range 30999-60999");
}

TEST(LauncherLayout, TorchrunNeedsOneTaskPerNode) {
  expect_outcome(check_launcher_layout(Mode::torchrun, 2, 2), "");
  expect_outcome(check_launcher_layout(Mode::tasks, 8, 2), "");
  expect_outcome(check_launcher_layout(Mode::torchrun, 4, 2),
                 "this step has 4 tasks on 2 nodes; use --ntasks-per-node=1");
}

StepPlan placement_plan(Mode mode, std::uint32_t node_rank, std::optional<std::uint32_t> first) {
  StepPlan plan;
  plan.mode = mode;
  plan.node_rank = node_rank;
  plan.first_rank = first;
  return plan;
}

TEST(Rank0Placement, OnlyWhenRanksAreSlurmsTaskIds) {
  struct Case {
    Mode mode;
    std::uint32_t node_rank;
    std::optional<std::uint32_t> first_rank;
    std::vector<std::uint32_t> ids;
    std::string_view message;  // empty: accepted
  };
  const Case cases[] = {
      {Mode::tasks, 0, std::nullopt, {0, 1}, ""},
      {Mode::tasks, 1, std::nullopt, {2, 3}, ""},
      {Mode::tasks, 0, std::nullopt, {0, 3}, ""},  // cyclic
      {Mode::tasks,
       2,
       std::nullopt,
       {0, 1},
       "SLURM_PROCID 0 runs on step node 2, not on the first node of SLURM_STEP_NODELIST"},
      {Mode::tasks,
       0,
       std::nullopt,
       {4, 5},
       "the first node of SLURM_STEP_NODELIST (which MASTER_ADDR names) holds no SLURM_PROCID 0"},
      // Ranks numbered by node (Slurm 26.05's topology order): RANK 0 is on node 0 anyway.
      {Mode::tasks, 2, 4, {0, 1}, ""},
      {Mode::tasks, 0, 0, {4, 5}, ""},
      {Mode::torchrun, 1, std::nullopt, {0}, ""},  // torchrun assigns ranks itself
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.node_rank);
    expect_outcome(check_rank0_placement(placement_plan(c.mode, c.node_rank, c.first_rank), c.ids),
                   c.message);
  }
  auto refused = check_rank0_placement(placement_plan(Mode::tasks, 2, std::nullopt),
                                       std::vector<std::uint32_t>{0});
  ASSERT_FALSE(refused);
  // The fix named must be one that works: not a --distribution, which 26.05 overrides.
  EXPECT_NE(refused.error().message.find("SLURM_STEP_TASKS_PER_NODE"), std::string::npos);
  EXPECT_EQ(refused.error().message.find("distribution"), std::string::npos);
}

TEST(ExplainRanks, NamesRanksThatDifferFromSlurmsTaskIds) {
  struct Case {
    std::optional<std::uint32_t> first_rank;
    std::vector<std::uint32_t> ids;
    std::optional<std::string> line;
  };
  const std::string tail =
      " (ranks follow SLURM_STEP_NODELIST so that RANK 0 is on its first node, MASTER_ADDR; "
      "Slurm numbered its tasks in another order)";
  const Case cases[] = {
      {4, {0, 1}, "ddp: node03: RANK 4-5 for SLURM_PROCID 0-1" + tail},
      {2, {1, 4}, "ddp: node03: RANK 2-3 for SLURM_PROCID 1,4" + tail},  // cyclic
      {0, {0, 1}, std::nullopt},                                         // the same
      {std::nullopt, {0, 1}, std::nullopt},                              // Slurm's ids
      {6, {6}, std::nullopt},
  };
  for (const auto& c : cases) {
    auto plan = placement_plan(Mode::tasks, 2, c.first_rank);
    EXPECT_EQ(explain_ranks("node03", plan, c.ids), c.line);
  }
  EXPECT_FALSE(
      explain_ranks("n", placement_plan(Mode::torchrun, 1, 1), std::vector<std::uint32_t>{0}));
}

TEST(AliasAddress, FindsTheNodesEntry) {
  const std::string_view aliases = "n1:10.0.0.1:n1-host,n2:[fd00::2]:n2,n3::n3,bad";
  EXPECT_EQ(alias_address(aliases, "n1").value_or("-"), "10.0.0.1");
  EXPECT_EQ(alias_address(aliases, "n2").value_or("-"), "fd00::2");
  EXPECT_FALSE(alias_address(aliases, "n3"));  // empty address
  EXPECT_FALSE(alias_address(aliases, "n4"));
  EXPECT_FALSE(alias_address(aliases, "bad"));
  EXPECT_FALSE(alias_address("", "n1"));
  EXPECT_FALSE(alias_address("n1:[fd00::1", "n1"));
}

HeadFacts resolved_to(std::vector<std::string_view> addresses) {
  HeadFacts facts;
  facts.head = facts.lookup_name = "node01";
  for (auto a : addresses) facts.resolved.push_back(ip(a));
  return facts;
}

TEST(HeadAddress, FromTheResolverByTheRule) {
  AddressPolicy policy;
  auto chosen = decide_head_address(resolved_to({"fe80::1", "192.168.0.1", "10.0.0.1"}), policy);
  ASSERT_TRUE(chosen) << chosen.error().message;
  EXPECT_EQ(chosen->value, "10.0.0.1");
  EXPECT_EQ(chosen->origin.rfind("node01 resolved to fe80::1, 192.168.0.1, 10.0.0.1; rule: ", 0),
            0u)
      << chosen->origin;
  policy.mode = AddrMode::hostname;
  policy.host_suffix = "-ib";
  HeadFacts facts = resolved_to({});
  facts.lookup_name = rewrite_host(facts.head, policy);
  chosen = decide_head_address(facts, policy);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->value, "node01-ib");
}

TEST(HeadAddress, SlurmsAddressWhenTheNameIsUnknown) {
  AddressPolicy policy;
  HeadFacts facts = resolved_to({});
  facts.resolve_error = "cannot resolve \"node01\": Name or service not known";
  facts.name_unknown = true;
  expect_outcome(decide_head_address(facts, policy),
                 "give the node an address in slurm.conf (NodeAddr=)");
  facts.slurm_address = "10.9.0.1";
  facts.slurm_origin = "NodeAddr in slurm.conf";
  auto chosen = decide_head_address(facts, policy);
  ASSERT_TRUE(chosen) << chosen.error().message;
  EXPECT_EQ(chosen->value, "10.9.0.1");
  EXPECT_EQ(chosen->origin,
            "Slurm's address for node01 (NodeAddr in slurm.conf); the name does "
            "not resolve");
  facts.slurm_address = "node01.example";  // NodeAddr given as a name: nothing to stand in
  expect_outcome(decide_head_address(facts, policy), "is not an IP address");
  facts.slurm_address = "169.254.3.3";
  expect_outcome(decide_head_address(facts, policy), "link-local");
  // host_suffix names another interface than Slurm's address: never substituted.
  facts.slurm_address = "10.9.0.1";
  facts.lookup_name = "node01-ib";
  expect_outcome(decide_head_address(facts, policy), "cannot resolve");
  // A resolver that timed out is not "unknown": no substitution either.
  facts.lookup_name = "node01";
  facts.name_unknown = false;
  facts.resolve_error = "cannot resolve \"node01\": no answer within 5 s (resolve_timeout=)";
  expect_outcome(decide_head_address(facts, policy), "no answer within 5 s");
}

TEST(Rank0Node, OwnAddressAndFreePort) {
  StepPlan plan;
  plan.master_addr = "10.0.0.1";
  plan.master_port = 23456;
  Rank0Facts facts;
  facts.targets = {ip("10.0.0.1")};
  facts.own = {ip("127.0.0.1"), ip("10.0.0.1")};
  expect_outcome(check_rank0_node(plan, facts, true, true), "");
  facts.own = {ip("127.0.0.1"), ip("10.0.0.2")};
  expect_outcome(check_rank0_node(plan, facts, true, true),
                 "MASTER_ADDR=10.0.0.1 is not an address of the rank-0 node (its addresses: "
                 "10.0.0.2)");
  expect_outcome(check_rank0_node(plan, facts, false, true), "");
  facts.bind_error = "cannot bind 10.0.0.1:23456: Address already in use";
  expect_outcome(check_rank0_node(plan, facts, false, true),
                 "MASTER_PORT=23456 is not free on the rank-0 node (cannot bind");
  expect_outcome(check_rank0_node(plan, facts, false, false), "");
}

TEST(Rank0Node, TargetsOfANameSkipLoopback) {
  auto literal = rank0_targets("10.0.0.1", {});
  ASSERT_TRUE(literal);
  EXPECT_EQ(literal->size(), 1u);
  const IpAddress resolved[] = {ip("127.0.1.1"), ip("10.0.0.1")};
  auto named = rank0_targets("node01", resolved);
  ASSERT_TRUE(named);
  ASSERT_EQ(named->size(), 1u);
  EXPECT_EQ(named->front().to_string(), "10.0.0.1");
  const IpAddress loopback[] = {ip("127.0.1.1")};
  expect_outcome(rank0_targets("node01", loopback), "resolves only to loopback addresses");
}

TEST(GpuBinding, RefusedWhenATaskSeesFewerGpusThanTheBusiestNodeHasTasks) {
  struct Case {
    Mode mode;
    std::optional<std::string_view> visible;
    std::uint32_t most_ntasks;
    bool keep;
    std::string_view message;
  };
  const Case cases[] = {
      {Mode::tasks, "0,1,2,3", 4, false, ""},
      {Mode::tasks, std::nullopt, 4, false, ""},  // CPU-only
      {Mode::tasks, "", 4, false, ""},
      {Mode::tasks, "NoDevFiles", 4, false, ""},
      {Mode::tasks, "2", 1, false, ""},    // one task per node: device 0 is its GPU
      {Mode::tasks, "2,3", 2, false, ""},  // --gpus-per-task=2, 2 tasks: LOCAL_RANK 1 is valid
      {Mode::tasks, "2", 4, false,
       "each task sees 1 GPU (CUDA_VISIBLE_DEVICES=2) but the step runs up to 4 tasks per node"},
      {Mode::tasks, "4,5", 3, false, "each task sees 2 GPUs (CUDA_VISIBLE_DEVICES=4,5)"},
      // A node with one task refuses too when another node of the step has two.
      {Mode::tasks, "0", 2, false, "the step runs up to 2 tasks per node"},
      {Mode::tasks, "2", 4, true, ""},
      {Mode::torchrun, "2", 4, false, ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.visible.value_or("<unset>")));
    expect_outcome(check_gpu_binding(c.mode, c.visible, c.most_ntasks, c.keep), c.message);
  }
  // The fix is in the message.
  auto refused = check_gpu_binding(Mode::tasks, "1", 2, false);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("--gpus-per-node=N"), std::string::npos);
  EXPECT_NE(refused.error().message.find("DDP_GPU_BIND=task"), std::string::npos);
}

TEST(Verbose, FollowsSrunDebug) {
  EXPECT_FALSE(srun_verbose(std::nullopt));
  EXPECT_FALSE(srun_verbose("3"));
  EXPECT_TRUE(srun_verbose("4"));
  EXPECT_TRUE(srun_verbose("9"));
  EXPECT_FALSE(srun_verbose("x"));
}

TEST(Explain, NamesAddressPortAndOrigins) {
  StepPlan plan;
  plan.master_port = 23456;
  plan.job_id = 12;
  plan.step_id = 3;
  const HeadAddress address{"10.0.0.1", "node01 resolved to 10.0.0.1"};
  EXPECT_EQ(explain_choice("node02", address, plan, PortRange{20000, 30999}),
            "ddp: node02: MASTER_ADDR=10.0.0.1 (node01 resolved to 10.0.0.1), MASTER_PORT=23456 "
            "(derived from job 12 step 3 in port_range=20000-30999)");
  plan.port_source = PortSource::user;
  EXPECT_NE(explain_choice("n", address, plan, {}).find("(DDP_MASTER_PORT)"), std::string::npos);
  plan.port_source = PortSource::reserved;
  EXPECT_NE(explain_choice("n", address, plan, {}).find("SLURM_STEP_RESV_PORTS"),
            std::string::npos);
}

}  // namespace
}  // namespace ddp
