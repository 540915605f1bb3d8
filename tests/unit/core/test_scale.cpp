// A 10,000-node x 8-task step simulated the way Slurm runs it: every node plans the step on its
// own and every task computes its own environment. The ranks must still form one world.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "libddp/core/environment.hpp"
#include "libddp/core/port.hpp"

namespace ddp {
namespace {

// The sanitizer build simulates 1,000 nodes (DDP_SCALE_NODES): memory and undefined-behaviour
// errors show at any size, and the 10,000-node arithmetic cost about 40 times as much under
// ASan + UBSan as in the plain build, where the full size runs.
#ifdef DDP_SCALE_NODES
constexpr std::uint32_t k_nodes = DDP_SCALE_NODES;
#else
constexpr std::uint32_t k_nodes = 10'000;
#endif
static_assert(k_nodes >= 2 && k_nodes <= 99'999, "node names have five digits");
constexpr std::uint32_t k_tasks_per_node = 8;
constexpr std::uint32_t k_world = k_nodes * k_tasks_per_node;

// "PREFIX[00001-NNNNN]" and "COUNT(xNODES)" for k_nodes, as Slurm writes them.
std::string compressed_nodelist(std::string_view prefix) {
  const std::string last = std::to_string(k_nodes);
  return std::string(prefix) + "[00001-" + std::string(5 - last.size(), '0') + last + "]";
}
std::string tasks_per_node(std::uint32_t count) {
  return std::to_string(count) + "(x" + std::to_string(k_nodes) + ")";
}

std::string expanded_nodelist() {
  std::string list;
  for (std::uint32_t i = 1; i <= k_nodes; ++i) {
    if (i > 1) list += ',';
    std::string digits = std::to_string(i);
    list += "node" + std::string(5 - digits.size(), '0') + digits;
  }
  return list;
}

std::string_view value_of(const EnvList& env, std::string_view key) {
  for (const auto& [k, v] : env)
    if (k == key) return v;
  ADD_FAILURE() << key << " missing";
  return {};
}

std::uint32_t number_of(const EnvList& env, std::string_view key) {
  return static_cast<std::uint32_t>(std::stoul(std::string(value_of(env, key))));
}

enum class Distribution { block, cyclic };

struct ScaleCase {
  std::string_view name;
  std::string nodelist;
  Distribution distribution;
};

TEST(Scale, TenThousandNodesAgreeOnOneWorld) {
  const ScaleCase cases[] = {
      {"compressed, block", compressed_nodelist("node"), Distribution::block},
      {"compressed, cyclic", compressed_nodelist("node"), Distribution::cyclic},
      {"expanded, block", expanded_nodelist(), Distribution::block},
  };
  const PortRange window{20000, 30999};
  const std::string layout = tasks_per_node(k_tasks_per_node);  // outlives every NodeInputs
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<int> rank_seen(k_world, 0);
    std::string master_addr;
    std::string master_port;
    for (std::uint32_t node = 0; node < k_nodes; ++node) {
      // What each node's slurmstepd sees, computed independently per node.
      NodeInputs in;
      in.mode = Mode::tasks;
      in.step_nodelist = c.nodelist;
      in.tasks_per_node = layout;
      in.node_id = node;
      in.ntasks = k_world;
      in.local_ntasks = k_tasks_per_node;
      in.job_id = 918273;
      in.step_id = 0;
      auto nodes = Hostlist::parse(c.nodelist);  // each node parses its list once
      ASSERT_TRUE(nodes) << nodes.error().message;
      auto plan = plan_step(in, *nodes, nodes->at(0), window);
      ASSERT_TRUE(plan) << plan.error().message;
      for (std::uint32_t local = 0; local < k_tasks_per_node; ++local) {
        const std::uint32_t global = c.distribution == Distribution::block
                                         ? node * k_tasks_per_node + local
                                         : local * k_nodes + node;
        const EnvList env = task_environment(*plan, TaskInputs{global, local});
        ASSERT_EQ(env.size(), 9u);
        if (master_addr.empty()) {
          master_addr = value_of(env, "MASTER_ADDR");
          master_port = value_of(env, "MASTER_PORT");
        }
        ASSERT_EQ(value_of(env, "MASTER_ADDR"), master_addr);
        ASSERT_EQ(value_of(env, "MASTER_PORT"), master_port);
        ASSERT_EQ(number_of(env, "WORLD_SIZE"), k_world);
        ASSERT_EQ(number_of(env, "NNODES"), k_nodes);
        ASSERT_EQ(number_of(env, "NODE_RANK"), node);
        ASSERT_EQ(number_of(env, "LOCAL_WORLD_SIZE"), k_tasks_per_node);
        const std::uint32_t local_rank = number_of(env, "LOCAL_RANK");
        ASSERT_LT(local_rank, k_tasks_per_node);
        ASSERT_EQ(local_rank, local);
        const std::uint32_t rank = number_of(env, "RANK");
        ASSERT_LT(rank, k_world);
        ++rank_seen[rank];
      }
    }
    EXPECT_EQ(master_addr, "node00001");
    EXPECT_EQ(master_port, std::to_string(derive_port(918273, 0, window)));
    for (std::uint32_t rank = 0; rank < k_world; ++rank)
      ASSERT_EQ(rank_seen[rank], 1) << "rank " << rank;
  }
}

TEST(Scale, TorchrunOnTenThousandNodes) {
  const PortRange window{20000, 30999};
  const std::string nodelist = compressed_nodelist("gpu");
  const std::string layout = tasks_per_node(1);  // outlives every NodeInputs
  std::vector<int> node_rank_seen(k_nodes, 0);
  for (std::uint32_t node = 0; node < k_nodes; ++node) {
    NodeInputs in;
    in.mode = Mode::torchrun;
    in.step_nodelist = nodelist;
    in.tasks_per_node = layout;
    in.node_id = node;
    in.ntasks = k_nodes;
    in.local_ntasks = 1;
    in.job_id = 5;
    in.gpus_on_node = "8";
    auto nodes = Hostlist::parse(nodelist);
    ASSERT_TRUE(nodes);
    auto plan = plan_step(in, *nodes, nodes->at(0), window);
    ASSERT_TRUE(plan) << plan.error().message;
    const EnvList env = task_environment(*plan, TaskInputs{node, 0});
    ASSERT_EQ(value_of(env, "MASTER_ADDR"), "gpu00001");
    ASSERT_EQ(number_of(env, "WORLD_SIZE"), k_world);
    const std::uint32_t node_rank = number_of(env, "NODE_RANK");
    ASSERT_LT(node_rank, k_nodes);
    ++node_rank_seen[node_rank];
  }
  for (std::uint32_t node = 0; node < k_nodes; ++node) ASSERT_EQ(node_rank_seen[node], 1);
}

}  // namespace
}  // namespace ddp
