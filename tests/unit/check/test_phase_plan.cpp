// The phase order and the budgets of a ddp-check process (phase_plan.hpp), role by role.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ddp-check/pairs/pairs.hpp"
#include "ddp-check/phase_plan.hpp"

namespace {

using namespace ddp::check;

struct Case {
  std::string name;
  Options options;
  Role role;
  std::vector<PhaseStep> steps;
  double collect_s;
};

Options with(void (*set)(Options&)) {
  Options o;
  set(o);
  return o;
}

TEST(PhasePlan, OrderAndBudgetsByRole) {
  const Options defaults;
  const Options pairs = with([](Options& o) { o.pairs = true; });
  const Options pairs_no_nccl = with([](Options& o) {
    o.pairs = true;
    o.nccl = false;
  });
  const Options fabric = with([](Options& o) {
    o.fabric = "ib";
    o.timeout_s = 2.5;
  });
  const Options plugin_pairs = with([](Options& o) {
    o.net_plugin = "aws-ofi";
    o.pairs = true;
    o.pairs_seconds = 2;
    o.pairs_rounds = 0;
  });
  const Role master{true, true, false, 3};
  const Role agent{false, true, false, 3};
  const Role agent_gpu{false, true, true, 3};
  const Role other_rank{false, false, true, 3};
  const Role master_12{true, true, false, 12};
  // 3 nodes: 3 rounds; 10 s to register, each round 2 x 0.5 s + 8 s, an NCCL round 25 s.
  const PhaseStep pairs_3{Phase::pairs, 10 + 3 * 9, 37 + 5};
  const PhaseStep pairs_3_nccl{Phase::pairs, 10 + 3 * 9 + 3 * 25, 112 + 5};
  const std::vector<Case> cases = {
      {"rank 0, defaults",
       defaults,
       master,
       {{Phase::rendezvous, 30, 31}, {Phase::nccl, 30, 0}},
       22.5},
      {"another rank waits for the verdict until the deadline",
       defaults,
       other_rank,
       {{Phase::rendezvous, 30, 31}, {Phase::nccl, 30, 0}},
       30},
      {"rank 0 coordinates the pairs",
       pairs,
       master,
       {{Phase::rendezvous, 30, 31}, {Phase::nccl, 30, 0}, pairs_3},
       22.5},
      {"the first rank of a node is its agent",
       pairs,
       agent,
       {{Phase::rendezvous, 30, 31}, {Phase::nccl, 30, 0}, pairs_3},
       30},
      {"an agent that can run NCCL counts the NCCL rounds",
       pairs,
       agent_gpu,
       {{Phase::rendezvous, 30, 31}, {Phase::nccl, 30, 0}, pairs_3_nccl},
       30},
      {"--no-nccl: no NCCL rounds in the budget",
       pairs_no_nccl,
       agent_gpu,
       {{Phase::rendezvous, 30, 31}, {Phase::nccl, 30, 0}, pairs_3},
       30},
      {"the other ranks of a node run no agent",
       pairs,
       other_rank,
       {{Phase::rendezvous, 30, 31}, {Phase::nccl, 30, 0}},
       30},
      {"--fabric first, unbounded; the watchdog rounds --timeout up",
       fabric,
       master,
       {{Phase::fabric, 0, 0}, {Phase::rendezvous, 2.5, 4}, {Phase::nccl, 2.5, 0}},
       1.875},
      {"--fabric only on the first process of a node",
       fabric,
       other_rank,
       {{Phase::rendezvous, 2.5, 4}, {Phase::nccl, 2.5, 0}},
       2.5},
      {"--net-plugin, every pair of 12 nodes: 11 rounds of 2 x 2 s + 8 s",
       plugin_pairs,
       master_12,
       {{Phase::fabric, 0, 0},
        {Phase::rendezvous, 30, 31},
        {Phase::nccl, 30, 0},
        {Phase::pairs, 10 + 11 * 12, 142 + 5}},
       22.5},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const PhasePlan plan = plan_phases(c.options, c.role);
    ASSERT_EQ(plan.steps.size(), c.steps.size());
    for (std::size_t i = 0; i < c.steps.size(); ++i) {
      SCOPED_TRACE(phase_name(c.steps[i].phase));
      EXPECT_EQ(plan.steps[i].phase, c.steps[i].phase);
      EXPECT_DOUBLE_EQ(plan.steps[i].budget_s, c.steps[i].budget_s);
      EXPECT_EQ(plan.steps[i].watchdog_s, c.steps[i].watchdog_s);
    }
    EXPECT_DOUBLE_EQ(plan.collect_s, c.collect_s);
    EXPECT_DOUBLE_EQ(plan.verdict_send_s, 2);
  }
}

// --pairs-rounds keeps the first rounds only: the budget counts those.
TEST(PhasePlan, PairsBudgetCountsTheRoundsThatRun) {
  EXPECT_DOUBLE_EQ(pairs_budget_s(2000, 0.5, 10, false), 10 + 10 * 9);
  EXPECT_DOUBLE_EQ(pairs_budget_s(2000, 0.5, 10, true), 10 + 10 * 9 + 10 * 25);
  EXPECT_DOUBLE_EQ(pairs_budget_s(4, 1, 0, false), 10 + 3 * 10);
  EXPECT_DOUBLE_EQ(pairs_budget_s(1, 0.5, 0, false), 10);
}

// Every wait rank 0 makes in the phase fits the budget: the registration and each round's bound
// (k_pairs_round_margin_s), as the named bounds say, however many nodes and seconds.
TEST(PhasePlan, PairsBudgetHoldsEveryWaitOfThePhase) {
  for (std::uint32_t nodes : {2u, 3u, 8u, 33u}) {
    for (double seconds : {0.1, 0.5, 5.0}) {
      for (bool nccl : {false, true}) {
        const auto rounds = static_cast<double>(pair_rounds(nodes, 10).size());
        const double waits = k_pairs_register_s + rounds * (2 * seconds + k_pairs_round_margin_s) +
                             (nccl ? rounds * k_nccl_round_s : 0);
        EXPECT_GE(pairs_budget_s(nodes, seconds, 10, nccl), waits);
        EXPECT_GE(pairs_budget_s(nodes, seconds, 10, nccl), pairs_longest_silence_s(seconds, nccl));
      }
    }
  }
}

TEST(PhasePlan, PhaseNames) {
  EXPECT_EQ(phase_name(Phase::fabric), "fabric");
  EXPECT_EQ(phase_name(Phase::rendezvous), "rendezvous");
  EXPECT_EQ(phase_name(Phase::nccl), "nccl");
  EXPECT_EQ(phase_name(Phase::pairs), "pairs");
}

}  // namespace
