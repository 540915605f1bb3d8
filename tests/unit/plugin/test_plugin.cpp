// spank_ddp.so itself, loaded as Slurm loads it (dlopen), driven through its exported
// callbacks by a scripted step (fake_slurm.cpp): the glue (plugin.cpp, local.cpp, remote.cpp)
// and the real OS layer (resolution, own addresses, a test bind, files, affinity) run as in
// slurmstepd, under the sanitizers in the ASan build. Each test loads a fresh copy of the
// plugin, so no state crosses from one test to the next.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <slurm/slurm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "fake_slurm.hpp"
#include "libddp/core/port.hpp"
#include "libddp/sys/system.hpp"
#include "libddp/util/rules.hpp"

namespace {

using Callback = int (*)(spank_t, int, char**);

class Plugin : public ::testing::Test {
 protected:
  void SetUp() override {
    // A task the plugin ends runs in a child process; glibc's resolver threads may be alive, so
    // the child starts afresh (re-executes this test up to that point) rather than fork alone.
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    fake::step() = fake::Step{};
    so_ = ::dlopen(DDP_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(so_, nullptr) << ::dlerror();
    for (auto& [name, fn] : {std::pair{"slurm_spank_init", &init_},
                             std::pair{"slurm_spank_local_user_init", &local_user_init_},
                             std::pair{"slurm_spank_user_init", &user_init_},
                             std::pair{"slurm_spank_task_init", &task_init_},
                             std::pair{"slurm_spank_task_exit", &task_exit_}}) {
      *fn = reinterpret_cast<Callback>(::dlsym(so_, name));
      ASSERT_NE(*fn, nullptr) << name;
    }
  }

  void TearDown() override {
    if (so_ == nullptr) return;
    ASSERT_EQ(::dlclose(so_), 0) << ::dlerror();
    EXPECT_EQ(::dlopen(DDP_PLUGIN_PATH, RTLD_NOW | RTLD_NOLOAD), nullptr)
        << "the plugin stayed loaded: the next test would see this one's state";
  }

  // slurm_spank_init with plugstack.conf arguments `args`, in the step's context.
  int init(std::vector<std::string> args = {}) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    return init_(fake::handle(), static_cast<int>(argv.size()), argv.data());
  }
  // The --ddp option as Slurm delivers it: srun (remote 0) or slurmstepd (remote 1).
  int option(const char* value, bool remote) {
    const auto& options = fake::step().options;
    EXPECT_EQ(options.size(), 1u);
    if (options.empty()) return -99;
    return options.front().cb(options.front().val, value, remote ? 1 : 0);
  }
  // A --ddp step up to its tasks: init with `args`, --ddp in slurmstepd, user_init.
  ::testing::AssertionResult launched(std::vector<std::string> args = {}) {
    if (init(std::move(args)) != 0) return ::testing::AssertionFailure() << "init failed";
    if (option(nullptr, true) != 0) return ::testing::AssertionFailure() << "--ddp refused";
    if (user_init() != 0) return ::testing::AssertionFailure() << "user_init failed";
    return ::testing::AssertionSuccess();
  }
  // task_init's return value in `rc`, and what it wrote on stderr (the srun -v line).
  std::string task_init_said(int& rc) {
    ::testing::internal::CaptureStderr();
    rc = task_init();
    return ::testing::internal::GetCapturedStderr();
  }
  int local_user_init() { return local_user_init_(fake::handle(), 0, nullptr); }
  int user_init() { return user_init_(fake::handle(), 0, nullptr); }
  int task_init() { return task_init_(fake::handle(), 0, nullptr); }
  int task_exit() { return task_exit_(fake::handle(), 0, nullptr); }

  // The first task of node 0 of job 4242 step 3: nodes HEAD,ddp-fake-02, tasks "2,1".
  static void remote_step(const std::string& head) {
    fake::Step& s = fake::step();
    s.context = S_CTX_REMOTE;
    s.items = {{S_JOB_ID, 4242},
               {S_JOB_STEPID, 3},
               {S_JOB_NODEID, 0},
               {S_JOB_TOTAL_TASK_COUNT, 3},
               {S_JOB_LOCAL_TASK_COUNT, 2},
               {S_TASK_GLOBAL_ID, 0},
               {S_TASK_ID, 0}};
    s.global_ids = {0, 1};
    s.env = {{"SLURM_STEP_NODELIST", head + ",ddp-fake-02"},
             {"SLURM_STEP_TASKS_PER_NODE", "2,1"},
             {"SLURM_CPUS_PER_TASK", "3"}};
  }
  // The task with local id `local` (global id `local` on node 0).
  static void as_task(std::uint32_t local) {
    fake::step().items[S_TASK_ID] = local;
    fake::step().items[S_TASK_GLOBAL_ID] = local;
  }
  // A non-loopback address of this machine, as the step's first node (so that the rank-0
  // checks, own address and test bind, run for real); empty when the machine has none.
  static std::string own_address() {
    for (const ddp::IpAddress& a : ddp::sys::local_addresses())
      if (a.family == ddp::Family::ipv4 && !a.is_loopback() && !a.is_link_local())
        return a.to_string();
    return "";
  }
  static std::string env(const std::string& name) {
    auto found = fake::step().env.find(name);
    return found == fake::step().env.end() ? "<unset>" : found->second;
  }
  static std::string errors() {
    std::string all;
    for (const std::string& e : fake::step().errors) all += e + "\n";
    return all;
  }

  void* so_ = nullptr;
  Callback init_ = nullptr;
  Callback local_user_init_ = nullptr;
  Callback user_init_ = nullptr;
  Callback task_init_ = nullptr;
  Callback task_exit_ = nullptr;
};

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

TEST_F(Plugin, RegistersDdpWhereSlurmTakesOptions) {
  for (spank_context_t context : {S_CTX_LOCAL, S_CTX_REMOTE, S_CTX_ALLOCATOR, S_CTX_SLURMD}) {
    fake::step().options.clear();
    fake::step().context = context;
    EXPECT_EQ(init(), 0);
    const std::size_t expected = context == S_CTX_SLURMD ? 0 : 1;
    ASSERT_EQ(fake::step().options.size(), expected) << context;
    if (expected == 0) continue;
    EXPECT_STREQ(fake::step().options.front().name, "ddp");
    EXPECT_EQ(fake::step().options.front().has_arg, 2);  // --ddp or --ddp=MODE
  }
  EXPECT_EQ(errors(), "");
}

TEST_F(Plugin, OptionAcceptsModesAndRefusesOthersByName) {
  fake::step().context = S_CTX_LOCAL;
  ASSERT_EQ(init(), 0);
  EXPECT_EQ(option("torchrun", false), 0);
  EXPECT_EQ(option("tasks", false), 0);  // given twice (environment, then command line)
  EXPECT_EQ(option(nullptr, false), 0);
  EXPECT_EQ(option("(null)", true), 0);  // salloc's bare --ddp, as its steps receive it
  EXPECT_EQ(errors(), "");
  EXPECT_EQ(option("foo", false), -1);
  EXPECT_EQ(errors(), "ddp: --ddp=foo: unknown mode (valid: tasks, torchrun)\n");
}

TEST_F(Plugin, WithoutDdpNothingHappens) {
  remote_step(own_address().empty() ? "ddp-fake-01" : own_address());
  ASSERT_EQ(init(), 0);
  const auto before = fake::step().env;
  EXPECT_EQ(user_init(), 0);
  EXPECT_EQ(task_init(), 0);
  EXPECT_EQ(task_exit(), 0);
  EXPECT_EQ(fake::step().env, before);
  EXPECT_EQ(fake::step().getenv_calls, 0);
  EXPECT_EQ(errors(), "");
}

TEST_F(Plugin, ExportsEveryTasksVariables) {
  const std::string head = own_address();
  if (head.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv4 address to be rank 0";
  remote_step(head);
  ASSERT_EQ(init({"port_range=20000-20999"}), 0);
  ASSERT_EQ(option("tasks", true), 0);
  ASSERT_EQ(user_init(), 0);
  ASSERT_EQ(errors(), "");
  as_task(1);
  fake::step().env["OMP_NUM_THREADS"] = "7";  // the user's value stays
  ASSERT_EQ(task_init(), 0);
  EXPECT_EQ(errors(), "");
  const std::string port = std::to_string(ddp::derive_port(4242, 3, {20000, 20999}));
  const std::pair<const char*, std::string> expected[] = {
      {"MASTER_ADDR", head},    {"MASTER_PORT", port},
      {"WORLD_SIZE", "3"},      {"RANK", "1"},
      {"LOCAL_RANK", "1"},      {"LOCAL_WORLD_SIZE", "2"},
      {"NODE_RANK", "0"},       {"GROUP_RANK", "0"},
      {"NNODES", "2"},          {"OMP_NUM_THREADS", "7"},
      {"PET_NNODES", "<unset>"}};
  for (const auto& [name, value] : expected) EXPECT_EQ(env(name), value) << name;
  EXPECT_EQ(task_exit(), 0);
  EXPECT_TRUE(fake::step().kills.empty());
}

TEST_F(Plugin, DerivesOmpThreadsAndExplainsUnderSrunVerbose) {
  const std::string head = own_address();
  if (head.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv4 address to be rank 0";
  remote_step(head);
  fake::step().env["SRUN_DEBUG"] = "4";  // srun -v
  fake::step().env["DDP_MASTER_PORT"] = "20123";
  ASSERT_TRUE(launched());
  int rc = -1;
  const std::string said = task_init_said(rc);
  ASSERT_EQ(rc, 0) << errors();
  EXPECT_EQ(said, "ddp: " + head + ": MASTER_ADDR=" + head + " (" + head + " resolved to " + head +
                      "; " + std::string(ddp::k_address_rule) +
                      "), MASTER_PORT=20123 (DDP_MASTER_PORT)\n");
  EXPECT_EQ(env("OMP_NUM_THREADS"), "3");  // SLURM_CPUS_PER_TASK
  EXPECT_EQ(env("MASTER_PORT"), "20123");
}

// One node of a 3-node step (HEAD,ddp-fake-02,ddp-fake-03) under a task layout Slurm produces:
// Slurm's task ids on that node and the RANKs the plugin must export for them.
struct LayoutCase {
  const char* name;
  const char* tasks_per_node;
  std::uint32_t node_id;
  std::vector<std::uint32_t> global_ids;  // Slurm's, by local id (SLURM_PROCID)
  std::vector<std::string> ranks;         // RANK, by local id
};

// RANK 0 is on node 0, the node MASTER_ADDR names, under every layout: ranks follow the node
// list and the counts every node reads alike, not Slurm's task ids (Slurm 26.05 numbers them in
// topology order by default when a topology plugin is configured).
TEST_F(Plugin, RanksFollowTheNodeListUnderEveryLayout) {
  const std::string head = own_address();
  if (head.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv4 address to be rank 0";
  const LayoutCase cases[] = {
      // topology/tree, switches s0: ddp-fake-03, s1: HEAD,ddp-fake-02 (Slurm 26.05).
      {"tree, node 2", "2(x3)", 2, {0, 1}, {"4", "5"}},
      {"tree, node 0", "2(x3)", 0, {2, 3}, {"0", "1"}},
      // topology/block, blocks ddp-fake-02, ddp-fake-03, HEAD; uneven counts.
      {"block, node 1", "3,1,2", 1, {0}, {"3"}},
      {"block, node 0", "3,1,2", 0, {3, 4, 5}, {"0", "1", "2"}},
      // Node-list order (older releases, CR_NO_DIST_TOPO_BLOCK, SwitchAsNodeRank): unchanged.
      {"list order, node 1", "2(x3)", 1, {2, 3}, {"2", "3"}},
      {"cyclic, node 1", "2(x3)", 1, {1, 4}, {"2", "3"}},
  };
  for (const LayoutCase& c : cases) {
    SCOPED_TRACE(c.name);
    TearDown();
    SetUp();
    remote_step(head);
    fake::Step& s = fake::step();
    s.env["SLURM_STEP_NODELIST"] = head + ",ddp-fake-02,ddp-fake-03";
    s.env["SLURM_STEP_TASKS_PER_NODE"] = c.tasks_per_node;
    s.env["SRUN_DEBUG"] = "4";  // srun -v
    s.items[S_JOB_NODEID] = c.node_id;
    s.items[S_JOB_TOTAL_TASK_COUNT] = 6;
    s.items[S_JOB_LOCAL_TASK_COUNT] = static_cast<std::uint32_t>(c.global_ids.size());
    s.global_ids = c.global_ids;
    ASSERT_TRUE(launched()) << errors();
    for (std::uint32_t local = 0; local < c.global_ids.size(); ++local) {
      s.items[S_TASK_ID] = local;
      s.items[S_TASK_GLOBAL_ID] = c.global_ids[local];
      int rc = -1;
      const std::string said = task_init_said(rc);
      ASSERT_EQ(rc, 0) << errors();
      EXPECT_EQ(env("RANK"), c.ranks[local]);
      EXPECT_EQ(env("LOCAL_RANK"), std::to_string(local));
      EXPECT_EQ(env("NODE_RANK"), std::to_string(c.node_id));
      EXPECT_EQ(env("MASTER_ADDR"), head);
      EXPECT_EQ(env("WORLD_SIZE"), "6");
      // srun -v names the ranks that differ from Slurm's task ids, once per node.
      const bool renumbered = c.ranks[local] != std::to_string(c.global_ids[local]);
      if (local == 0) {
        EXPECT_EQ(contains(said, "for SLURM_PROCID"), renumbered) << said;
      }
    }
    EXPECT_EQ(errors(), "");
  }
}

// A head name the resolver does not know: Slurm's address for it stands in (SLURM_NODE_ALIASES,
// else NodeAddr through libslurm's lookups). glibc refuses a name with '_' without asking DNS.
TEST_F(Plugin, SlurmsAddressStandsInForAHeadNameThatDoesNotResolve) {
  const std::string head = own_address();
  if (head.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv4 address to be rank 0";
  if (!ddp::sys::resolve_host("ddp_fake_01", 5).unknown)
    GTEST_SKIP() << "this machine's resolver does not say that ddp_fake_01 does not exist";
  for (const bool aliases : {false, true}) {
    SCOPED_TRACE(aliases ? "SLURM_NODE_ALIASES" : "NodeAddr");
    TearDown();
    SetUp();
    remote_step("ddp_fake_01");
    fake::step().env["SRUN_DEBUG"] = "4";
    if (aliases)
      fake::step().env["SLURM_NODE_ALIASES"] = "ddp_fake_01:" + head + ":ddp_fake_01";
    else
      fake::step().node_addrs["ddp_fake_01"] = head;
    ASSERT_TRUE(launched());
    int rc = -1;
    const std::string said = task_init_said(rc);
    ASSERT_EQ(rc, 0) << errors();
    EXPECT_EQ(env("MASTER_ADDR"), head);
    const std::string origin = aliases ? "SLURM_NODE_ALIASES" : "NodeAddr in slurm.conf";
    EXPECT_TRUE(contains(said, "MASTER_ADDR=" + head + " (Slurm's address for ddp_fake_01 (" +
                                   origin + "); the name does not resolve)"))
        << said;
  }
}

TEST_F(Plugin, TorchrunModeWithSocketIfnameAuto) {
  const std::string head = own_address();
  if (head.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv4 address to be rank 0";
  std::string interface;
  for (const ddp::InterfaceAddress& i : ddp::sys::interface_addresses())
    if (i.address.to_string() == head) interface = i.name;
  ASSERT_FALSE(interface.empty()) << head;
  remote_step(head);
  fake::step().items[S_JOB_TOTAL_TASK_COUNT] = 2;
  fake::step().items[S_JOB_LOCAL_TASK_COUNT] = 1;
  fake::step().global_ids = {0};
  fake::step().env["SLURM_STEP_TASKS_PER_NODE"] = "1(x2)";
  fake::step().env["SLURM_GPUS_ON_NODE"] = "4";
  ASSERT_TRUE(launched({"default_mode=torchrun", "socket_ifname=auto"}));
  ASSERT_EQ(task_init(), 0) << errors();
  const std::pair<const char*, std::string> expected[] = {{"MASTER_ADDR", head},
                                                          {"NNODES", "2"},
                                                          {"NODE_RANK", "0"},
                                                          {"NPROC_PER_NODE", "4"},
                                                          {"WORLD_SIZE", "8"},
                                                          {"PET_NPROC_PER_NODE", "4"},
                                                          {"PET_MASTER_ADDR", head},
                                                          {"RANK", "<unset>"},
                                                          {"LOCAL_RANK", "<unset>"},
                                                          {"NCCL_SOCKET_IFNAME", "=" + interface},
                                                          {"GLOO_SOCKET_IFNAME", interface}};
  for (const auto& [name, value] : expected) EXPECT_EQ(env(name), value) << name;
}

TEST_F(Plugin, SrunRefusesATorchrunLayoutBeforeLaunch) {
  fake::step().context = S_CTX_LOCAL;
  fake::step().items = {{S_JOB_NNODES, 2}, {S_JOB_TOTAL_TASK_COUNT, 4}};
  ASSERT_EQ(init(), 0);
  ASSERT_EQ(option("torchrun", false), 0);
  EXPECT_EQ(local_user_init(), -1);
  EXPECT_TRUE(contains(errors(),
                       "ddp: --ddp=torchrun starts one torchrun launcher per node, but "
                       "this step has 4 tasks on 2 nodes"))
      << errors();
}

TEST_F(Plugin, ConfigErrorRefusesOnlyDdp) {
  fake::step().context = S_CTX_LOCAL;
  ASSERT_EQ(init({"port_range=20000-20999", "colour=blue"}), 0);  // never an outage
  EXPECT_EQ(local_user_init(), 0);                                // a job without --ddp runs
  EXPECT_EQ(errors(), "");
  EXPECT_EQ(option(nullptr, false), -1);
  EXPECT_TRUE(contains(errors(), "ddp: plugstack.conf, arguments of "));
  EXPECT_TRUE(contains(errors(), "spank_ddp.so: unknown plugstack.conf argument \"colour\""));
  EXPECT_TRUE(contains(errors(), "--ddp is refused until it is fixed")) << errors();
}

TEST_F(Plugin, ConfigErrorEndsDdpTasksInSlurmstepd) {
  remote_step("ddp-fake-01");
  ASSERT_EQ(init({"addr=maybe"}), 0);
  ASSERT_EQ(fake::step().infos.size(), 1u);  // the slurmd log says why --ddp is refused
  EXPECT_TRUE(contains(fake::step().infos.front(), "addr=\"maybe\"")) << fake::step().infos.front();
  ASSERT_EQ(option(nullptr, true), 0);
  EXPECT_EQ(user_init(), 0);
  EXPECT_TRUE(contains(errors(), "addr=\"maybe\"")) << errors();
  EXPECT_EXIT(task_init(), ::testing::ExitedWithCode(1), "");
  EXPECT_EQ(task_exit(), 0);
  EXPECT_TRUE(fake::step().kills.empty());  // every node refuses alike: nothing to cancel
  EXPECT_EQ(env("MASTER_ADDR"), "<unset>");
}

TEST_F(Plugin, AFaultOnThisNodeEndsTheStepOnEveryNode) {
  remote_step("127.0.0.1");  // loopback never qualifies as MASTER_ADDR
  ASSERT_TRUE(launched());
  EXPECT_TRUE(contains(errors(), "ddp: 127.0.0.1: no usable address for \"127.0.0.1\""))
      << errors();
  EXPECT_EXIT(task_init(), ::testing::ExitedWithCode(1), "");
  EXPECT_EQ(task_exit(), 0);
  EXPECT_EQ(task_exit(), 0);  // the second task's exit asks no more
  ASSERT_EQ(fake::step().kills.size(), 1u);
  EXPECT_EQ(fake::step().kills.front().job_id, 4242u);
  EXPECT_EQ(fake::step().kills.front().step_id, 3u);
  EXPECT_EQ(fake::step().kills.front().signal, SIGKILL);
}

TEST_F(Plugin, ACancellationSlurmRefusesIsReportedWithTheWorkaround) {
  remote_step("127.0.0.1");
  fake::step().kill_result = -1;
  ASSERT_TRUE(launched());
  EXPECT_EQ(task_exit(), 0);
  EXPECT_TRUE(contains(errors(),
                       "cannot end the step on the other nodes (Invalid job id "
                       "specified); their tasks run until they end: use srun -K"))
      << errors();
}

TEST_F(Plugin, BadStepValuesAreRefusedByName) {
  struct Case {
    const char* variable;
    const char* value;  // nullptr: unset
    const char* message;
  };
  const Case cases[] = {
      {"DDP_MASTER_PORT", "http", "DDP_MASTER_PORT=\"http\""},
      {"DDP_MASTER_PORT", "99999", "DDP_MASTER_PORT=\"99999\""},
      {"SLURM_STEP_TASKS_PER_NODE", "2(x", "SLURM_STEP_TASKS_PER_NODE"},
      {"SLURM_STEP_TASKS_PER_NODE", "2,2", "sums to 4 tasks, but the step has 3"},
      {"SLURM_STEP_NODELIST", "n[1-", "SLURM_STEP_NODELIST: bad hostlist"},
      {"SLURM_STEP_NODELIST", nullptr, "SLURM_STEP_NODELIST is not set in this step"},
      {"SLURM_HET_SIZE", "2", "heterogeneous steps are not supported by --ddp"},
      {"SLURM_STEP_RESV_PORTS", "x-y", "SLURM_STEP_RESV_PORTS"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.variable);
    TearDown();
    SetUp();
    remote_step("ddp-fake-01");
    if (c.value)
      fake::step().env[c.variable] = c.value;
    else
      fake::step().env.erase(c.variable);
    ASSERT_EQ(init(), 0);
    ASSERT_EQ(option(nullptr, true), 0);
    EXPECT_EQ(user_init(), 0);
    EXPECT_TRUE(contains(errors(), c.message)) << errors();
    EXPECT_EXIT(task_init(), ::testing::ExitedWithCode(1), "");
    EXPECT_EQ(task_exit(), 0);
    EXPECT_TRUE(fake::step().kills.empty());  // the same value reaches every node
  }
}

TEST_F(Plugin, AMissingSlurmItemIsRefused) {
  remote_step("ddp-fake-01");
  fake::step().items.erase(S_JOB_NODEID);
  ASSERT_EQ(init(), 0);
  ASSERT_EQ(option(nullptr, true), 0);
  EXPECT_EQ(user_init(), 0);
  EXPECT_TRUE(contains(errors(), "ddp: Slurm did not provide the node id")) << errors();
  EXPECT_EXIT(task_init(), ::testing::ExitedWithCode(1), "");
}

TEST_F(Plugin, ReadsValuesLongerThanAnyFirstBuffer) {
  const std::string head = own_address();
  if (head.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv4 address to be rank 0";
  remote_step(head);
  std::string nodes = head;
  for (int i = 1; i < 6000; ++i) nodes += ",ddp-fake-node-" + std::to_string(i);
  ASSERT_GT(nodes.size(), 4096u * 4);  // two buffer growths
  fake::step().env["SLURM_STEP_NODELIST"] = nodes;
  fake::step().env["SLURM_STEP_TASKS_PER_NODE"] = "2,1(x5999)";
  fake::step().items[S_JOB_TOTAL_TASK_COUNT] = 6001;
  ASSERT_TRUE(launched());
  ASSERT_EQ(task_init(), 0) << errors();
  EXPECT_EQ(env("NNODES"), "6000");
  EXPECT_EQ(env("WORLD_SIZE"), "6001");
}

TEST_F(Plugin, PerTaskGpuBindingIsRefusedUnlessKept) {
  const std::string head = own_address();
  if (head.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv4 address to be rank 0";
  remote_step(head);
  // --gpus-per-task=1: Slurm has bound this task to GPU 1 before task_init.
  fake::step().env["CUDA_VISIBLE_DEVICES"] = "1";
  ASSERT_TRUE(launched());
  EXPECT_EXIT(task_init(), ::testing::ExitedWithCode(1),
              "each task sees 1 GPU \\(CUDA_VISIBLE_DEVICES=1\\) but the step runs up to 2 tasks");
  fake::step().env["DDP_GPU_BIND"] = "task";
  as_task(1);
  ASSERT_EQ(task_init(), 0) << errors();
  EXPECT_EQ(env("LOCAL_RANK"), "1");
  EXPECT_EQ(env("CUDA_VISIBLE_DEVICES"), "1");  // Slurm's binding is left as it is
}

TEST_F(Plugin, AnUnevenStepIsRefusedOnItsOneTaskNodeToo) {
  remote_step("ddp-fake-01");
  // Node 1 of "2,1": one task, bound to one GPU, enough for itself; node 0 refuses its two.
  fake::step().items[S_JOB_NODEID] = 1;
  fake::step().items[S_JOB_LOCAL_TASK_COUNT] = 1;
  fake::step().global_ids = {2};
  fake::step().env["CUDA_VISIBLE_DEVICES"] = "0";
  ASSERT_TRUE(launched({"addr=hostname"})) << errors();  // no resolver: the name is exported
  as_task(0);
  fake::step().items[S_TASK_GLOBAL_ID] = 2;
  EXPECT_EXIT(task_init(), ::testing::ExitedWithCode(1),
              "ddp-fake-02: each task sees 1 GPU \\(CUDA_VISIBLE_DEVICES=0\\) but the step runs up "
              "to 2 tasks per node");
}

TEST_F(Plugin, ASetenvSlurmRefusesEndsTheTaskNamingTheVariable) {
  const std::string head = own_address();
  if (head.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv4 address to be rank 0";
  remote_step(head);
  fake::step().refuse_setenv = "RANK";
  ASSERT_TRUE(launched());
  EXPECT_EXIT(task_init(), ::testing::ExitedWithCode(1), "ddp: cannot set RANK \\(--ddp\\)");
}

TEST_F(Plugin, BatchAndExternStepsAreLeftAlone) {
  for (std::uint32_t special : {SLURM_BATCH_SCRIPT, SLURM_EXTERN_CONT}) {
    TearDown();
    SetUp();
    remote_step("127.0.0.1");  // would be refused in a --ddp step
    fake::step().items[S_JOB_STEPID] = special;
    ASSERT_EQ(init(), 0);
    ASSERT_EQ(option(nullptr, true), 0);
    EXPECT_EQ(user_init(), 0);
    EXPECT_EQ(task_init(), 0);
    EXPECT_EQ(task_exit(), 0);
    EXPECT_EQ(env("MASTER_ADDR"), "<unset>");
    EXPECT_EQ(errors(), "");
  }
}

TEST_F(Plugin, EnvFileIsExportedAndAnUnreadableOneIsAFaultOfThisNode) {
  const std::string head = own_address();
  if (head.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv4 address to be rank 0";
  // One file per process: ctest -j may run this test beside another copy of itself.
  const std::string path =
      ::testing::TempDir() + "ddp-plugin-test-" + std::to_string(::getpid()) + ".env";
  std::ofstream(path) << "NCCL_DEBUG=INFO\nNCCL_IB_HCA=mlx5\n";
  remote_step(head);
  fake::step().env["NCCL_DEBUG"] = "WARN";  // the user's own value wins (env_override=no)
  ASSERT_TRUE(launched({"env_file=" + path}));
  ASSERT_EQ(task_init(), 0) << errors();
  EXPECT_EQ(env("NCCL_DEBUG"), "WARN");
  EXPECT_EQ(env("NCCL_IB_HCA"), "mlx5");
  std::remove(path.c_str());

  TearDown();
  SetUp();
  remote_step(head);
  ASSERT_TRUE(launched({"env_file=" + path}));
  EXPECT_TRUE(contains(errors(), "env_file: ")) << errors();
  EXPECT_TRUE(contains(errors(), path)) << errors();
  EXPECT_EXIT(task_init(), ::testing::ExitedWithCode(1), "");
  EXPECT_EQ(task_exit(), 0);
  EXPECT_EQ(fake::step().kills.size(), 1u);  // this node's fault: the others are ended too
}

// The site env_file is read in every --ddp step's user_init: what is not a small regular file is
// refused at once, as this node's fault, never waited on or read without end.
TEST_F(Plugin, EnvFileThatIsNotASmallRegularFileIsRefusedAtOnce) {
  const std::string head = own_address();
  if (head.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv4 address to be rank 0";
  // A folder of its own (ctest -j runs copies of this test side by side). The death tests'
  // children run this test again from the top ("threadsafe" style): they take the parent's
  // folder from the environment instead of making one that nobody would remove.
  constexpr const char* k_inherited = "DDP_PLUGIN_TEST_ENV_DIR";
  const bool child = std::getenv(k_inherited) != nullptr;
  std::string dir = child ? std::getenv(k_inherited) : "";
  if (!child) {
    std::string pattern = ::testing::TempDir() + "ddp-plugin-env-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir = pattern;
    ::setenv(k_inherited, dir.c_str(), 1);
  }
  const std::string fifo = dir + "/fifo", big = dir + "/big.env";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::ofstream(big) << std::string(200000, '#') << "\n";
  const struct {
    std::string path, why;
  } cases[] = {{fifo, "not a regular file"},
               {"/dev/zero", "not a regular file"},
               {dir, "not a regular file"},
               {big, "larger than 65536 bytes"}};
  for (const auto& c : cases) {
    TearDown();
    SetUp();
    remote_step(head);
    ::alarm(20);  // today's reader blocks on the FIFO: fail rather than hang
    ASSERT_TRUE(launched({"env_file=" + c.path}));
    ::alarm(0);
    EXPECT_TRUE(contains(errors(), "env_file: cannot read \"" + c.path + "\": " + c.why))
        << errors();
    EXPECT_EXIT(task_init(), ::testing::ExitedWithCode(1), "");
  }
  if (child) return;
  ::unsetenv(k_inherited);
  std::remove(fifo.c_str());
  std::remove(big.c_str());
  ::rmdir(dir.c_str());
}

// Memory running out inside a callback is reported and refused, never an abort: the guard's
// handlers allocate nothing.
TEST_F(Plugin, OutOfMemoryInACallbackIsAnErrorNotAnAbort) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizer build keeps its own operator new, which cannot be made to fail";
#else
  EXPECT_EXIT(
      {
        char arg[] = "port_range=20000-30999";
        char* argv[] = {arg};
        fake::out_of_memory = true;
        const int rc = init_(fake::handle(), 1, argv);
        fake::out_of_memory = false;
        std::exit(rc == -1 && contains(errors(), "ddp: init: out of memory") ? 0 : 2);
      },
      ::testing::ExitedWithCode(0), "");
#endif
}

}  // namespace
