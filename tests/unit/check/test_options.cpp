// ddp-check's options and the DDP environment it reads.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "ddp-check/options.hpp"

namespace ddp::check {
namespace {

using Env = std::map<std::string, std::string, std::less<>>;

EnvLookup lookup(const Env& env) {
  return [&env](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

Result<Options> parse(std::vector<std::string_view> args, const Env& env = {}) {
  return parse_options(args, lookup(env));
}

TEST(Options, Defaults) {
  auto o = parse({});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->timeout_s, 30);
  EXPECT_TRUE(o->nccl);
  EXPECT_FALSE(o->nccl_min_busbw);
  EXPECT_FALSE(o->scope);
}

TEST(Options, TimeoutFromFlagOverEnv) {
  EXPECT_EQ(parse({}, {{"DDP_CHECK_TIMEOUT", "7.5"}})->timeout_s, 7.5);
  EXPECT_EQ(parse({"--timeout", "3"}, {{"DDP_CHECK_TIMEOUT", "7"}})->timeout_s, 3);
  EXPECT_EQ(parse({"--timeout=0.5"})->timeout_s, 0.5);
  EXPECT_EQ(*parse({"--nccl-min-busbw", "80"})->nccl_min_busbw, 80);
  EXPECT_EQ(*parse({}, {{"DDP_CHECK_NCCL_MIN_BUSBW", "12.5"}})->nccl_min_busbw, 12.5);
  EXPECT_EQ(parse({"--mode", "torchrun"})->scope, Scope::nodes);
  EXPECT_EQ(parse({"--topology", "x.xml"})->topology, "x.xml");
  EXPECT_TRUE(parse({"--topology"})->topology_live);
  EXPECT_EQ(parse({})->auth, AuthMode::munge);
  EXPECT_EQ(parse({"--auth=none"})->auth, AuthMode::none);
  EXPECT_EQ(parse({"--auth", "munge"}, {{"DDP_CHECK_AUTH", "none"}})->auth, AuthMode::munge);
  EXPECT_EQ(parse({}, {{"DDP_CHECK_AUTH", "none"}})->auth, AuthMode::none);
  EXPECT_EQ(parse({"--munge-socket", "/run/m"})->munge_socket, "/run/m");
  EXPECT_EQ(parse({}, {{"DDP_CHECK_MUNGE_SOCKET", "/run/e"}})->munge_socket, "/run/e");
  EXPECT_FALSE(parse({"--no-nccl"})->nccl);
  EXPECT_TRUE(parse({"--help"})->help);
}

TEST(Options, ErrorsNameTheOption) {
  struct Case {
    std::vector<std::string_view> args;
    Env env;
    std::string message;
  };
  const Case cases[] = {
      {{"--timeout", "0"}, {}, "--timeout \"0\": expected seconds"},
      {{"--timeout", "-1"}, {}, "--timeout \"-1\": expected seconds"},
      {{"--timeout", "1h"}, {}, "--timeout \"1h\": expected seconds"},
      {{"--timeout"}, {}, "--timeout: missing value"},
      {{}, {{"DDP_CHECK_TIMEOUT", "soon"}}, "DDP_CHECK_TIMEOUT \"soon\": expected seconds"},
      {{"--mode", "mpi"}, {}, "--mode \"mpi\": unknown mode (valid: tasks, torchrun)"},
      {{"--nccl-min-busbw", "fast"}, {}, "--nccl-min-busbw \"fast\": expected a bus bandwidth"},
      {{"--nccl-bytes", "2"},
       {},
       "--nccl-bytes \"2\": expected a whole number from 4 to 17179869184"},
      {{"--no-nccl=1"}, {}, "--no-nccl takes no value"},
      {{"--frobnicate"}, {}, "unknown option \"--frobnicate\" (see --help)"},
      {{"--timout=5"},
       {},
       "unknown option \"--timout=5\" (did you mean \"--timeout\"? see --help)"},
      {{"--auth", "kerberos"},
       {},
       "--auth \"kerberos\": unknown authentication (valid: munge, none)"},
      {{}, {{"DDP_CHECK_AUTH", "off"}}, "DDP_CHECK_AUTH \"off\": unknown authentication"},
      {{"--munge-socket="}, {}, "--munge-socket: expected the path of munged's socket"},
      {{"--route-to", "10.0.0.1"}, {}, "--route-to only goes with --topology"},
  };
  for (const auto& c : cases) {
    auto o = parse(c.args, c.env);
    ASSERT_FALSE(o) << c.message;
    EXPECT_NE(o.error().message.find(c.message), std::string::npos) << o.error().message;
  }
}

TEST(Options, PairsAndFabric) {
  auto o = parse({"--pairs", "--pairs-threshold=0.3", "--pairs-seconds", "2", "--fabric", "ib",
                  "--net-plugin", "ofi", "--sysfs-root", "/tmp/fake", "--pairs-bytes", "4096"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_TRUE(o->pairs);
  EXPECT_EQ(o->pairs_threshold, 0.3);
  EXPECT_EQ(o->pairs_seconds, 2);
  EXPECT_EQ(o->pairs_bytes, 4096u);
  EXPECT_EQ(o->fabric, "ib");
  EXPECT_EQ(o->net_plugin, "ofi");
  EXPECT_EQ(o->sysfs_root, "/tmp/fake");
  auto d = parse({});
  EXPECT_FALSE(d->pairs);
  EXPECT_EQ(d->pairs_threshold, 0.5);
  EXPECT_EQ(d->pairs_bytes, 64u << 20);
  EXPECT_EQ(d->sysfs_root, "/sys");
  EXPECT_FALSE(d->fabric);
  auto e = parse({}, {{"DDP_CHECK_FABRIC", "efa"}, {"DDP_CHECK_NET_PLUGIN", "aws-ofi"}});
  EXPECT_EQ(e->fabric, "efa");
  EXPECT_EQ(e->net_plugin, "aws-ofi");
  const std::pair<std::vector<std::string_view>, std::string> bad[] = {
      {{"--pairs-threshold", "1"}, "--pairs-threshold \"1\": expected a share of the median"},
      {{"--pairs-seconds", "0"}, "--pairs-seconds \"0\": expected seconds"},
      {{"--pairs=yes"}, "--pairs takes no value"},
      {{"--pairs-bytes", "0"},
       "--pairs-bytes \"0\": expected a whole number from 1 to 17179869184"},
      {{"--pairs-byte=1"}, "did you mean \"--pairs-bytes\"?"},
      {{"--fabric", "roce"}, "--fabric: unknown fabric \"roce\"; valid: ib, efa, cxi, socket"},
      {{"--net-plugin="}, "--net-plugin: expected the name NCCL_NET_PLUGIN takes"},
  };
  for (const auto& [args, message] : bad) {
    auto r = parse(args);
    ASSERT_FALSE(r) << message;
    EXPECT_NE(r.error().message.find(message), std::string::npos) << r.error().message;
  }
  auto env_bad = parse({}, {{"DDP_CHECK_FABRIC", "ibx"}});
  ASSERT_FALSE(env_bad);
  EXPECT_EQ(env_bad.error().message,
            "DDP_CHECK_FABRIC: unknown fabric \"ibx\" (did you mean \"ib\"?); valid: ib, efa, cxi, "
            "socket");
}

TEST(Options, PairsRounds) {
  EXPECT_EQ(parse({})->pairs_rounds, k_default_pairs_rounds);
  EXPECT_EQ(parse({"--pairs-rounds", "3"})->pairs_rounds, 3u);
  EXPECT_EQ(parse({"--pairs-rounds=all"})->pairs_rounds, 0u);
  const std::pair<std::vector<std::string_view>, std::string> bad[] = {
      {{"--pairs-rounds", "0"},
       "--pairs-rounds \"0\": expected a whole number from 1 to 100000 (or all)"},
      {{"--pairs-rounds", "every"},
       "--pairs-rounds \"every\": expected a whole number from 1 to 100000 (or all)"},
      {{"--pairs-round=2"}, "did you mean \"--pairs-rounds\"?"},
  };
  for (const auto& [args, message] : bad) {
    auto r = parse(args);
    ASSERT_FALSE(r) << message;
    EXPECT_NE(r.error().message.find(message), std::string::npos) << r.error().message;
  }
}

Env tasks_env() {
  return {
      {"MASTER_ADDR", "node001"},   {"MASTER_PORT", "29500"},  {"WORLD_SIZE", "8"}, {"RANK", "5"},
      {"LOCAL_RANK", "1"},          {"LOCAL_WORLD_SIZE", "4"}, {"NODE_RANK", "1"},  {"NNODES", "2"},
      {"CUDA_VISIBLE_DEVICES", "1"}};
}

TEST(Identity, TasksMode) {
  Env env = tasks_env();
  auto id = read_identity(lookup(env), std::nullopt, "node002");
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(id->scope, Scope::ranks);
  EXPECT_EQ(id->master_addr, "node001");
  EXPECT_EQ(id->master_port, 29500);
  EXPECT_EQ(id->self.rank, 5u);
  EXPECT_EQ(id->self.world_size, 8u);
  EXPECT_EQ(id->self.local_rank, 1u);
  EXPECT_EQ(id->self.local_world_size, 4u);
  EXPECT_EQ(id->self.node_rank, 1u);
  EXPECT_EQ(id->self.host, "node002");
  EXPECT_EQ(id->self.gpus, "1");
  EXPECT_FALSE(id->is_master());

  env["DDP_CHECK_HOSTNAME"] = "fake7";
  env.erase("CUDA_VISIBLE_DEVICES");
  env["SLURM_GPUS_ON_NODE"] = "4";
  id = read_identity(lookup(env), std::nullopt, "node002");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->self.host, "fake7");
  EXPECT_EQ(id->self.gpus, "n=4");
}

// DDP_CHECK_RUN_TAG, which ddp-watch sets for the run: kept to end the suspect lines with, and
// refused when it is not a run tag (it would be printed into a line ddp-watch reads).
TEST(Identity, RunTag) {
  Env env = tasks_env();
  auto id = read_identity(lookup(env), std::nullopt, "node002");
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(id->run_tag, "");
  env["DDP_CHECK_RUN_TAG"] = "0123456789abcdef";
  id = read_identity(lookup(env), std::nullopt, "node002");
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(id->run_tag, "0123456789abcdef");
  env["DDP_CHECK_RUN_TAG"] = "abc]: slow";
  id = read_identity(lookup(env), std::nullopt, "node002");
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().message,
            "DDP_CHECK_RUN_TAG=\"abc]: slow\": not a run tag (8 to 64 lowercase hex digits, as "
            "ddp-watch sets it)");
}

TEST(Identity, TorchrunModeTurnsNodesIntoRanks) {
  Env env = {{"MASTER_ADDR", "node001"}, {"MASTER_PORT", "29500"}, {"NNODES", "3"},
             {"NODE_RANK", "2"},         {"NPROC_PER_NODE", "4"},  {"WORLD_SIZE", "12"}};
  auto id = read_identity(lookup(env), std::nullopt, "node003");
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(id->scope, Scope::nodes);
  EXPECT_EQ(id->self.rank, 2u);
  EXPECT_EQ(id->self.world_size, 3u);
  EXPECT_EQ(id->self.nproc_per_node, 4u);
  EXPECT_EQ(id->self.gpus, "-");

  env["WORLD_SIZE"] = "8";
  id = read_identity(lookup(env), std::nullopt, "node003");
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().message, "WORLD_SIZE=8 but NNODES*NPROC_PER_NODE=12");

  env["WORLD_SIZE"] = "0";
  env["NPROC_PER_NODE"] = "0";
  id = read_identity(lookup(env), std::nullopt, "node003");
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().message,
            "NPROC_PER_NODE \"0\": expected a whole number from 1 to 4294967295");
}

TEST(Identity, MissingOrBadVariablesAreNamed) {
  struct Case {
    std::string drop, set, value, message;
  };
  const Case cases[] = {
      {"MASTER_ADDR", "", "", "MASTER_ADDR is not set (run under `srun --ddp`"},
      {"MASTER_PORT", "", "", "MASTER_PORT is not set"},
      {"", "MASTER_PORT", "70000",
       "MASTER_PORT \"70000\": expected a whole number from 1 to 65535"},
      {"LOCAL_RANK", "", "", "LOCAL_RANK is not set"},
      {"", "WORLD_SIZE", "eight",
       "WORLD_SIZE \"eight\": expected a whole number from 0 to 4294967295"},
      {"", "NODE_RANK", "-1", "NODE_RANK \"-1\": expected a whole number from 0 to 4294967295"},
  };
  for (const auto& c : cases) {
    Env env = tasks_env();
    if (!c.drop.empty()) env.erase(c.drop);
    if (!c.set.empty()) env[c.set] = c.value;
    auto id = read_identity(lookup(env), std::nullopt, "h");
    ASSERT_FALSE(id) << c.message;
    EXPECT_NE(id.error().message.find(c.message), std::string::npos) << id.error().message;
  }
  auto none = read_identity(lookup({}), std::nullopt, "h");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("neither RANK nor NODE_RANK"), std::string::npos);
}

TEST(Identity, PetVariablesServeAsFallback) {
  Env env = {{"PET_MASTER_ADDR", "10.0.0.1"},
             {"PET_MASTER_PORT", "29400"},
             {"NNODES", "1"},
             {"NODE_RANK", "0"}};
  auto id = read_identity(lookup(env), std::nullopt, "n");
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(id->master_addr, "10.0.0.1");
  EXPECT_EQ(id->master_port, 29400);
  EXPECT_TRUE(id->is_master());
}

}  // namespace
}  // namespace ddp::check
