// Modes, step validation and the exported variables, in both modes.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "libddp/core/environment.hpp"
#include "libddp/core/port.hpp"

namespace ddp {
namespace {

constexpr PortRange k_window{20000, 30999};

TEST(Mode, ParsesValuesAndDefault) {
  struct Case {
    std::string_view value;
    Mode default_mode;
    bool ok;
    Mode mode;
    std::string_view message;
  };
  const Case cases[] = {
      {"", Mode::tasks, true, Mode::tasks, ""},
      {"", Mode::torchrun, true, Mode::torchrun, ""},
      {"tasks", Mode::torchrun, true, Mode::tasks, ""},
      {"torchrun", Mode::tasks, true, Mode::torchrun, ""},
      {"foo", Mode::tasks, false, Mode::tasks, "--ddp=foo: unknown mode (valid: tasks, torchrun)"},
      {"Tasks", Mode::tasks, false, Mode::tasks,
       "--ddp=Tasks: unknown mode (valid: tasks, torchrun)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.value) + "/" + std::string(mode_name(c.default_mode)));
    auto mode = parse_mode(c.value, c.default_mode);
    ASSERT_EQ(mode.has_value(), c.ok);
    if (c.ok)
      EXPECT_EQ(*mode, c.mode);
    else
      EXPECT_EQ(mode.error().message, c.message);
  }
  EXPECT_EQ(mode_name(Mode::tasks), "tasks");
  EXPECT_EQ(mode_name(Mode::torchrun), "torchrun");
}

TEST(HeadHost, IsTheFirstName) {
  struct Case {
    std::string_view nodelist;
    std::string_view head;  // empty: error
  };
  const Case cases[] = {
      {"node1", "node1"},
      {"node[003-010]", "node003"},
      {"rack[2-3]-n[07-08],x", "rack2-n07"},
      {"b1,a1", "b1"},
      {"", ""},
      {"node[1-", ""},
      {"node1,,node2", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.nodelist);
    auto nodes = Hostlist::parse(c.nodelist);
    if (c.head.empty()) {
      ASSERT_FALSE(nodes);
      EXPECT_EQ(nodes.error().message.rfind("bad hostlist", 0), 0u) << nodes.error().message;
    } else {
      ASSERT_TRUE(nodes) << nodes.error().message;
      EXPECT_EQ(nodes->at(0), c.head);
    }
  }
}

NodeInputs inputs(Mode mode, std::string_view nodelist, std::string_view tasks_per_node,
                  std::uint32_t node_id, std::uint32_t ntasks, std::uint32_t local_ntasks) {
  NodeInputs in;
  in.mode = mode;
  in.step_nodelist = nodelist;
  in.tasks_per_node = tasks_per_node;
  in.node_id = node_id;
  in.ntasks = ntasks;
  in.local_ntasks = local_ntasks;
  in.job_id = 4242;
  in.step_id = 3;
  return in;
}

// plan_step() on the node list of `in`, parsed as the plugin does, once.
Result<StepPlan> plan_of(const NodeInputs& in, std::string_view master_addr) {
  auto nodes = Hostlist::parse(in.step_nodelist);
  if (!nodes) return fail("SLURM_STEP_NODELIST: " + nodes.error().message);
  return plan_step(in, *nodes, master_addr, k_window);
}

TEST(PlanStep, ComputesThePlan) {
  auto in = inputs(Mode::tasks, "node[01-04]", "2(x3),1", 3, 7, 1);
  auto plan = plan_of(in, "10.0.0.1");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->mode, Mode::tasks);
  EXPECT_EQ(plan->master_addr, "10.0.0.1");
  EXPECT_EQ(plan->master_port, derive_port(4242, 3, k_window));
  EXPECT_EQ(plan->nnodes, 4u);
  EXPECT_EQ(plan->ntasks, 7u);
  EXPECT_EQ(plan->node_rank, 3u);
  EXPECT_EQ(plan->local_ntasks, 1u);
  EXPECT_EQ(plan->most_ntasks, 2u);  // the busiest node's count, not this node's
  EXPECT_EQ(plan->nproc_per_node, 1u);
  EXPECT_EQ(plan->port_source, PortSource::derived);
  EXPECT_EQ(plan->job_id, 4242u);
  EXPECT_EQ(plan->step_id, 3u);
}

TEST(PlanStep, BusiestNodeIsThisOneWithoutTasksPerNode) {
  auto in = inputs(Mode::tasks, "n[1-2]", "", 1, 3, 2);
  auto plan = plan_of(in, "h");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->most_ntasks, 2u);
}

// Slurm's task ids per node for one layout: `order` lists node ids in the order Slurm fills
// them (node-list order, or the topology order of Slurm 26.05's _task_layout_topo), `cyclic`
// deals the tasks out one per node in turn instead of block by block.
std::vector<std::vector<std::uint32_t>> slurm_task_ids(const std::vector<unsigned>& counts,
                                                       const std::vector<std::size_t>& order,
                                                       bool cyclic) {
  std::vector<std::vector<std::uint32_t>> ids(counts.size());
  std::uint32_t next = 0;
  if (!cyclic) {
    for (std::size_t node : order)
      for (unsigned i = 0; i < counts[node]; ++i) ids[node].push_back(next++);
    return ids;
  }
  for (bool placed = true; placed;) {
    placed = false;
    for (std::size_t node : order)
      if (ids[node].size() < counts[node]) ids[node].push_back(next++), placed = true;
  }
  return ids;
}

struct LayoutCase {
  std::string_view name;
  std::string_view nodelist;
  std::string_view tasks_per_node;
  std::vector<unsigned> counts;    // the same counts, one per node
  std::vector<std::size_t> order;  // the order Slurm numbers the nodes' tasks in
  bool cyclic;
  std::vector<std::vector<std::uint32_t>> ranks;  // RANK of each node's tasks, by local id
};

// Every node plans alone, from what Slurm gives it; together the ranks must be complete and
// unique, RANK 0 must be on the first node (MASTER_ADDR), and RANK = first rank + LOCAL_RANK.
TEST(PlanStep, RanksFollowTheNodeListUnderEveryLayout) {
  const LayoutCase cases[] = {
      // Slurm 26.05, topology/tree with switches s0: node03, s1: node[01-02]: task 0 on node03.
      {"tree", "node[01-03]", "2(x3)", {2, 2, 2}, {2, 0, 1}, false, {{0, 1}, {2, 3}, {4, 5}}},
      // topology/block with blocks node[02-03], node01, uneven counts.
      {"block", "node[01-03]", "3,1,2", {3, 1, 2}, {1, 2, 0}, false, {{0, 1, 2}, {3}, {4, 5}}},
      // Node-table order (TopologyParam=SwitchAsNodeRank): the list itself is out of name order.
      {"table",
       "node03,node[01-02]",
       "2(x3)",
       {2, 2, 2},
       {0, 1, 2},
       false,
       {{0, 1}, {2, 3}, {4, 5}}},
      // The alphabetical order of releases before 26.05 (or CR_NO_DIST_TOPO_BLOCK).
      {"alpha",
       "node[01-04]",
       "2(x3),1",
       {2, 2, 2, 1},
       {0, 1, 2, 3},
       false,
       {{0, 1}, {2, 3}, {4, 5}, {6}}},
      {"cyclic", "n[1-3]", "2(x3)", {2, 2, 2}, {0, 1, 2}, true, {{0, 1}, {2, 3}, {4, 5}}},
      {"one node", "n1", "4", {4}, {0}, false, {{0, 1, 2, 3}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto slurm_ids = slurm_task_ids(c.counts, c.order, c.cyclic);
    const std::uint32_t ntasks = std::accumulate(c.counts.begin(), c.counts.end(), 0u);
    std::vector<int> seen(ntasks, 0);
    for (std::uint32_t node = 0; node < c.counts.size(); ++node) {
      SCOPED_TRACE(node);
      auto plan = plan_of(
          inputs(Mode::tasks, c.nodelist, c.tasks_per_node, node, ntasks, c.counts[node]), "head");
      ASSERT_TRUE(plan) << plan.error().message;
      for (std::uint32_t local = 0; local < c.counts[node]; ++local) {
        const auto env = task_environment(*plan, TaskInputs{slurm_ids[node][local], local});
        const std::uint32_t rank = std::stoul(env[3].second);
        EXPECT_EQ(env[3].first, "RANK");
        EXPECT_EQ(rank, c.ranks[node][local]);
        EXPECT_EQ(env[4],
                  (std::pair<std::string, std::string>{"LOCAL_RANK", std::to_string(local)}));
        EXPECT_EQ(env[6], (std::pair<std::string, std::string>{"NODE_RANK", std::to_string(node)}));
        EXPECT_EQ(env[0].second, "head");  // every node names the first node
        ASSERT_LT(rank, ntasks);
        ++seen[rank];
        if (rank == 0) {
          EXPECT_EQ(node, 0u);
        }
      }
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(ntasks));
  }
}

TEST(PlanStep, RankIsSlurmsTaskIdWithoutTasksPerNode) {
  auto plan = plan_of(inputs(Mode::tasks, "n[1-2]", "", 1, 4, 2), "h");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_FALSE(plan->first_rank);
  EXPECT_EQ(task_rank(*plan, TaskInputs{3, 1}), 3u);
  plan = plan_of(inputs(Mode::tasks, "n[1-2]", "2(x2)", 1, 4, 2), "h");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->first_rank, 2u);
  EXPECT_EQ(task_rank(*plan, TaskInputs{0, 1}), 3u);
}

TEST(PlanStep, PortPrecedence) {
  auto in = inputs(Mode::tasks, "n[1-2]", "1(x2)", 0, 2, 1);
  in.reserved_ports = "12000-12001";
  EXPECT_EQ(plan_of(in, "h")->master_port, 12000);
  in.user_port = "29500";
  EXPECT_EQ(plan_of(in, "h")->master_port, 29500);
  in.user_port = "http";
  auto plan = plan_of(in, "h");
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("DDP_MASTER_PORT=\"http\""), std::string::npos);
}

TEST(PlanStep, RejectsInconsistentSteps) {
  struct Case {
    std::string_view name;
    NodeInputs in;
    std::string_view message;
  };
  const Case cases[] = {
      {"bad nodelist", inputs(Mode::tasks, "n[1-", "", 0, 1, 1),
       "SLURM_STEP_NODELIST: bad hostlist \"n[1-\""},
      {"bad tasks per node", inputs(Mode::tasks, "n[1-2]", "2(x", 0, 4, 2),
       "SLURM_STEP_TASKS_PER_NODE: bad tasks-per-node list \"2(x\""},
      {"node count mismatch", inputs(Mode::tasks, "n[1-4]", "2(x3)", 0, 6, 2),
       "SLURM_STEP_TASKS_PER_NODE=\"2(x3)\" lists 3 nodes but SLURM_STEP_NODELIST=\"n[1-4]\" has "
       "4"},
      {"node id outside", inputs(Mode::tasks, "n[1-4]", "", 4, 4, 1),
       "node id 4 is outside the step's 4 nodes"},
      {"local count mismatch", inputs(Mode::tasks, "n[1-2]", "2,1", 1, 3, 2),
       "SLURM_STEP_TASKS_PER_NODE=\"2,1\" puts 1 tasks on node id 1, but this node runs 2"},
      {"sum mismatch", inputs(Mode::tasks, "n[1-2]", "2,1", 0, 4, 2),
       "SLURM_STEP_TASKS_PER_NODE=\"2,1\" sums to 3 tasks, but the step has 4"},
      {"no tasks", inputs(Mode::tasks, "n1", "", 0, 0, 0), "inconsistent task counts"},
      {"local above total", inputs(Mode::tasks, "n1", "", 0, 1, 2), "inconsistent task counts"},
      {"torchrun crowded", inputs(Mode::torchrun, "gpu[01-04]", "1,1,4,1", 0, 7, 1),
       "--ddp=torchrun starts one torchrun launcher per node, but this step has 4 tasks on node "
       "gpu03; use --ntasks-per-node=1 (torchrun starts the workers)"},
      {"torchrun crowded here, no layout", inputs(Mode::torchrun, "gpu[01-04]", "", 1, 8, 2),
       "this step has 2 tasks on node gpu02; use --ntasks-per-node=1"},
      {"torchrun crowded elsewhere, no layout", inputs(Mode::torchrun, "gpu[01-04]", "", 1, 5, 1),
       "this step has 5 tasks on 4 nodes; use --ntasks-per-node=1"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto plan = plan_of(c.in, "10.0.0.1");
    ASSERT_FALSE(plan);
    EXPECT_NE(plan.error().message.find(c.message), std::string::npos) << plan.error().message;
  }
  auto plan = plan_of(inputs(Mode::tasks, "n1", "", 0, 1, 1), "");
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("empty MASTER_ADDR"), std::string::npos);
}

TEST(PlanStep, NprocPerNodeInTorchrunMode) {
  struct Case {
    std::string_view name;
    std::optional<std::string_view> override_value;
    std::optional<std::string_view> gpus;
    std::optional<std::string_view> cuda;
    std::uint32_t nproc;                         // 0: error
    std::optional<std::uint32_t> detected = {};  // the driver's GPU list (plugin looked it up)
  };
  const Case cases[] = {
      {"nothing", {}, {}, {}, 1},
      {"driver lists 4, Slurm says nothing", {}, {}, {}, 4, 4u},
      {"driver lists none", {}, {}, {}, 1, 0u},
      {"Slurm's count wins over the driver", {}, "2", {}, 2, 8u},
      {"CUDA_VISIBLE_DEVICES wins over the driver", {}, {}, "0,1", 2, 8u},
      {"empty CUDA_VISIBLE_DEVICES hides the driver's GPUs", {}, {}, "", 1, 8u},
      {"NoDevFiles hides the driver's GPUs", {}, {}, "NoDevFiles", 1, 8u},
      {"override wins over the driver", "3", {}, {}, 3, 8u},
      {"absurd driver count ignored", {}, {}, {}, 1, 100000u},
      {"override wins", "3", "8", "0,1", 3},
      {"empty override is unset", "", "8", {}, 8},
      {"gpus on node", {}, "4", "0,1", 4},
      {"zero gpus falls through", {}, "0", "0,1,2", 3},
      {"garbage gpus falls through", {}, "x", "0,1", 2},
      {"cuda visible", {}, {}, "0,1,2,3,4,5,6,7", 8},
      {"cuda uuid", {}, {}, "GPU-8f2c1f43-aaaa", 1},
      {"NoDevFiles", {}, {}, "NoDevFiles", 1},
      {"empty cuda", {}, {}, "", 1},
      {"bad override", "two", {}, {}, 0},
      {"zero override", "0", {}, {}, 0},
      {"huge override", "100000", {}, {}, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto in = inputs(Mode::torchrun, "gpu[1-2]", "1(x2)", 1, 2, 1);
    in.nproc_override = c.override_value;
    in.gpus_on_node = c.gpus;
    in.cuda_visible = c.cuda;
    in.gpus_detected = c.detected;
    auto plan = plan_of(in, "gpu1");
    if (c.nproc == 0) {
      ASSERT_FALSE(plan);
      EXPECT_NE(plan.error().message.find("DDP_NPROC_PER_NODE=\""), std::string::npos)
          << plan.error().message;
    } else {
      ASSERT_TRUE(plan) << plan.error().message;
      EXPECT_EQ(plan->nproc_per_node, c.nproc);
    }
  }
}

TEST(TaskEnvironment, TasksModeExportsEveryRankVariableInOrder) {
  StepPlan plan;
  plan.mode = Mode::tasks;
  plan.master_addr = "node001-ib.cluster.example";
  plan.master_port = 23456;
  plan.nnodes = 4;
  plan.ntasks = 32;
  plan.node_rank = 2;
  plan.local_ntasks = 8;
  const EnvList expected{
      {"MASTER_ADDR", "node001-ib.cluster.example"},
      {"MASTER_PORT", "23456"},
      {"WORLD_SIZE", "32"},
      {"RANK", "21"},
      {"LOCAL_RANK", "5"},
      {"LOCAL_WORLD_SIZE", "8"},
      {"NODE_RANK", "2"},
      {"GROUP_RANK", "2"},
      {"NNODES", "4"},
  };
  EXPECT_EQ(task_environment(plan, TaskInputs{21, 5}), expected);
}

TEST(TaskEnvironment, TorchrunModeLeavesRanksToTorchrun) {
  StepPlan plan;
  plan.mode = Mode::torchrun;
  plan.master_addr = "10.0.0.1";
  plan.master_port = 29500;
  plan.nnodes = 16;
  plan.ntasks = 16;
  plan.node_rank = 15;
  plan.local_ntasks = 1;
  plan.nproc_per_node = 8;
  const EnvList expected{
      {"MASTER_ADDR", "10.0.0.1"},
      {"MASTER_PORT", "29500"},
      {"NNODES", "16"},
      {"NODE_RANK", "15"},
      {"GROUP_RANK", "15"},
      {"NPROC_PER_NODE", "8"},
      {"WORLD_SIZE", "128"},
      {"PET_NNODES", "16"},
      {"PET_NODE_RANK", "15"},
      {"PET_NPROC_PER_NODE", "8"},
      {"PET_MASTER_ADDR", "10.0.0.1"},
      {"PET_MASTER_PORT", "29500"},
  };
  EXPECT_EQ(task_environment(plan, TaskInputs{15, 0}), expected);
}

TEST(TaskEnvironment, LargeNumbers) {
  StepPlan plan;
  plan.master_addr = "h";
  plan.master_port = 65535;
  plan.nnodes = 0xffffffffu;
  plan.ntasks = 0xffffffffu;
  plan.node_rank = 0xfffffffeu;
  plan.local_ntasks = 1;
  auto env = task_environment(plan, TaskInputs{0xfffffffeu, 0});
  EXPECT_EQ(env[1].second, "65535");
  EXPECT_EQ(env[2].second, "4294967295");
  EXPECT_EQ(env[3].second, "4294967294");
  plan.mode = Mode::torchrun;
  plan.nproc_per_node = 4096;
  env = task_environment(plan, TaskInputs{});
  EXPECT_EQ(env[6], (std::pair<std::string, std::string>{"WORLD_SIZE", "17592186040320"}));
}

}  // namespace
}  // namespace ddp
