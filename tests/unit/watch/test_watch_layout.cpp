// Slurm's step layout (sattach --layout) and the ranks it gives srun's task ids where ranks
// follow the node list: the crash summary under Slurm 26.05's topology order names the rank the
// program had, not srun's task id.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ddp-watch/crash.hpp"
#include "ddp-watch/layout.hpp"
#include "ddp-watch/supervise_core.hpp"
#include "libddp/util/text.hpp"

using namespace ddp::watch;
using std::chrono::seconds;

namespace {

const Clock::time_point t0{};

// What sattach --layout printed on the embedded cluster as a topology/tree site under Slurm
// 26.05 (node03 alone on the first leaf switch): task 0 on node03, the last node of the list.
const char* const k_topology_layout =
    "Job step layout:\n"
    "\t6 tasks, 3 nodes (node[01-03])\n"
    "\n"
    "\tNode 0 (node01), 2 task(s): 2 3 \n"
    "\tNode 1 (node02), 2 task(s): 4 5 \n"
    "\tNode 2 (node03), 2 task(s): 0 1 \n";

// ddp-watch's options around `srun --ddp python3 SCRIPT` with a stall timeout of `timeout` s.
Options ddp_step(long timeout, std::string script) {
  Options o;
  o.timeout_s = timeout;
  o.startup_s = 60;
  o.grace_s = 10;
  o.command = {"srun", "--ddp", "python3", std::move(script)};
  return o;
}

std::vector<std::pair<std::string, std::vector<int>>> nodes_of(const StepLayout& layout) {
  std::vector<std::pair<std::string, std::vector<int>>> out;
  for (const StepLayout::Node& n : layout.nodes) out.emplace_back(n.name, n.tasks);
  return out;
}

}  // namespace

TEST(WatchLayout, ParsesSattachLayout) {
  auto layout = parse_step_layout(k_topology_layout);
  ASSERT_TRUE(layout);
  EXPECT_EQ(nodes_of(*layout), (std::vector<std::pair<std::string, std::vector<int>>>{
                                   {"node01", {2, 3}}, {"node02", {4, 5}}, {"node03", {0, 1}}}));
  // Cyclic distribution, and a node without a trailing space.
  auto cyclic = parse_step_layout(
      "Job step layout:\n\t4 tasks, 2 nodes (n[1-2])\n\n\tNode 0 (n1), 2 task(s): 0 2 \n"
      "\tNode 1 (n2), 2 task(s): 1 3\n");
  ASSERT_TRUE(cyclic);
  EXPECT_EQ(nodes_of(*cyclic), (std::vector<std::pair<std::string, std::vector<int>>>{
                                   {"n1", {0, 2}}, {"n2", {1, 3}}}));
}

TEST(WatchLayout, RefusesWhatIsNoLayout) {
  const char* const bad[] = {
      "",
      "sattach: error: Could not get job step info: Invalid job id specified\n",
      // a task twice; an id beyond the count; a count unlike the ids; nodes out of order
      "Job step layout:\n\t2 tasks, 2 nodes (n[1-2])\n\tNode 0 (n1), 1 task(s): 0\n"
      "\tNode 1 (n2), 1 task(s): 0\n",
      "Job step layout:\n\t2 tasks, 2 nodes (n[1-2])\n\tNode 0 (n1), 1 task(s): 0\n"
      "\tNode 1 (n2), 1 task(s): 2\n",
      "Job step layout:\n\t2 tasks, 1 nodes (n1)\n\tNode 0 (n1), 3 task(s): 0 1\n",
      "Job step layout:\n\t2 tasks, 2 nodes (n[1-2])\n\tNode 1 (n2), 1 task(s): 1\n"
      "\tNode 0 (n1), 1 task(s): 0\n",
      // fewer ids than the step's tasks; a word that is no id; no nodes at all
      "Job step layout:\n\t3 tasks, 1 nodes (n1)\n\tNode 0 (n1), 2 task(s): 0 1\n",
      "Job step layout:\n\t1 tasks, 1 nodes (n1)\n\tNode 0 (n1), 1 task(s): x\n",
      "Job step layout:\n\t0 tasks, 0 nodes ()\n",
      // more tasks than any step has
      "Job step layout:\n\t999999999 tasks, 1 nodes (n1)\n",
  };
  for (const char* text : bad) EXPECT_FALSE(parse_step_layout(text)) << text;
}

TEST(WatchLayout, RanksFollowTheNodeList) {
  auto topology = parse_step_layout(k_topology_layout);
  ASSERT_TRUE(topology);
  EXPECT_EQ(ranks_by_node(*topology),
            (std::map<int, int>{{2, 0}, {3, 1}, {4, 2}, {5, 3}, {0, 4}, {1, 5}}));
  // Block distribution in list order: each task id is its rank.
  auto block = parse_step_layout(
      "Job step layout:\n\t5 tasks, 3 nodes (n[1-3])\n\tNode 0 (n1), 2 task(s): 0 1\n"
      "\tNode 1 (n2), 2 task(s): 2 3\n\tNode 2 (n3), 1 task(s): 4\n");
  ASSERT_TRUE(block);
  EXPECT_EQ(ranks_by_node(*block), (std::map<int, int>{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}}));
  // Cyclic: node by node all the same.
  auto cyclic = parse_step_layout(
      "Job step layout:\n\t4 tasks, 2 nodes (n[1-2])\n\tNode 0 (n1), 2 task(s): 0 2\n"
      "\tNode 1 (n2), 2 task(s): 1 3\n");
  ASSERT_TRUE(cyclic);
  EXPECT_EQ(ranks_by_node(*cyclic), (std::map<int, int>{{0, 0}, {2, 1}, {1, 2}, {3, 3}}));
}

TEST(WatchLayout, WhichStepsNumberRanksByNode) {
  struct Case {
    std::vector<std::string> command;
    std::optional<std::string_view> spank_ddp;
    bool expected;
  };
  const Case cases[] = {
      {{"srun", "--ddp", "python3", "train.py"}, std::nullopt, true},
      {{"srun", "-N3", "--ddp=tasks", "python3", "train.py"}, std::nullopt, true},
      {{"srun", "--ddp=torchrun", "torchrun", "train.py"}, std::nullopt, false},
      {{"srun", "python3", "train.py"}, std::nullopt, false},
      {{"srun", "python3", "train.py", "--ddp"}, std::nullopt, false},  // the program's
      {{"srun", "python3", "train.py"}, "(null)", true},                // sbatch --ddp
      {{"srun", "python3", "train.py"}, "", true},
      {{"srun", "python3", "train.py"}, "tasks", true},
      {{"srun", "python3", "train.py"}, "torchrun", false},
      {{"srun", "--ddp=torchrun", "torchrun", "t.py"}, "tasks", false},  // srun's own wins
      // ddpgen's per-task setup for a site without the plugin
      {{"srun", "--ntasks-per-node=2", "bash", "-c", "...", "ddpgen-task", "tasks", "2", "20000",
        "11000", "python3", "train.py"},
       std::nullopt,
       true},
      {{"srun", "bash", "-c", "...", "ddpgen-task", "torchrun", "2", "20000", "11000", "torchrun"},
       std::nullopt,
       false},
      {{"python3", "train.py"}, "tasks", false},  // not srun: no task ids
  };
  for (const Case& c : cases)
    EXPECT_EQ(numbers_ranks_by_node(c.command, c.spank_ddp), c.expected)
        << ddp::text::join(c.command, " ");
}

// The killed rank 3 runs on node02, whose tasks Slurm 26.05 numbered 4 and 5 (topology order):
// srun says "task 5", the summary says rank 3.
TEST(WatchLayout, CrashSummaryNamesTheRankUnderTopologyOrder) {
  const Options o = ddp_step(20, "stall.py");
  Supervisor s(o, JobEnv{"42", "", "", "", false, "", std::nullopt});
  s.steps_before({});
  s.started(t0);
  EXPECT_EQ(s.on_tick(t0 + seconds(1)).act, Act::none);  // no task has printed yet
  s.on_output(t0 + seconds(2), Stream::out, "2: step 1 time 1.0\n");
  ASSERT_EQ(s.on_tick(t0 + seconds(2)).act, Act::layout);
  auto argv = s.layout_request({{"42.0", "node[01-03]"}}, t0 + seconds(2));
  ASSERT_TRUE(argv);
  EXPECT_EQ(*argv, (std::vector<std::string>{"sattach", "--layout", "42.0"}));
  s.on_layout(k_topology_layout);
  EXPECT_EQ(s.on_tick(t0 + seconds(8)).act, Act::none);  // read once
  s.on_output(t0 + seconds(9), Stream::err,
              "srun: error: node02: task 5: Killed\n"
              "srun: error: node01: tasks 2-3: Exited with exit code 1\n"
              "srun: error: node02: task 4: Exited with exit code 1\n"
              "srun: error: node03: tasks 0-1: Exited with exit code 1\n");
  EXPECT_EQ(s.on_exit(1).announce,
            (std::vector<std::string>{
                "first failure: rank 3 on node02, killed by SIGKILL (signal 9); collateral: "
                "ranks 0-2,4,5 (ended after it: lost a peer, or stopped by srun)"}));
}

// A layout that cannot be had is asked for again, k_layout_retry apart, k_layout_tries times;
// then srun's task ids stand for the ranks, as before. A step without --ddp never asks.
TEST(WatchLayout, AskedAFewTimesThenLeft) {
  Options o = ddp_step(60, "train.py");
  Supervisor s(o, JobEnv{"42", "", "", "", false, "", std::nullopt});
  s.steps_before({{"42.0", "node01"}});
  s.started(t0);
  s.on_output(t0 + seconds(1), Stream::out, "0: x\n");
  int asked = 0;
  for (int at = 1; at < 25; ++at) {
    if (s.on_tick(t0 + seconds(at)).act != Act::layout) continue;
    ++asked;
    // Only the step from before runs: the command's is not known yet.
    EXPECT_FALSE(s.layout_request({{"42.0", "node01"}}, t0 + seconds(at)));
    s.on_layout("");
  }
  EXPECT_EQ(asked, Supervisor::k_layout_tries);
  s.on_output(t0 + seconds(25), Stream::err, "srun: error: node02: task 5: Killed\n");
  EXPECT_EQ(
      s.on_exit(137).announce,
      (std::vector<std::string>{"first failure: rank 5 on node02, killed by SIGKILL (signal 9)"}));

  o.command = {"srun", "python3", "train.py"};
  Supervisor plain(o, JobEnv{"42", "", "", "", false, "", std::nullopt});
  plain.started(t0);
  plain.on_output(t0 + seconds(1), Stream::out, "0: x\n");
  for (int at = 1; at < 20; ++at) EXPECT_EQ(plain.on_tick(t0 + seconds(at)).act, Act::none);
}

// The preflight's rank 0 under topology order: Slurm 26.05 gave task 0 to node03, and RANK 0,
// which judges the hellos and names nodes, is task 2 on node01 (the first node of the list). Its
// suspect line counts, task 0's does not; the layout is asked for from the start, a second
// apart, since a failing check may say nothing before it ends.
TEST(WatchLayout, ThePreflightsRankZeroIsTheFirstTaskOfTheFirstNode) {
  Options o;
  o.timeout_s = 60;
  o.command = {"srun", "--ddp", "ddp-check", "--timeout=30"};
  o.heal = "rec";
  Supervisor s(o, JobEnv{"42", "", "", "", false, "", std::nullopt});
  s.steps_before({});
  s.started(t0);
  ASSERT_EQ(s.on_tick(t0).act, Act::layout);  // no task has printed: asked all the same
  EXPECT_FALSE(s.layout_request({}, t0));      // the step is not running yet
  s.on_layout("");
  EXPECT_EQ(s.on_tick(t0 + std::chrono::milliseconds(500)).act, Act::none);
  ASSERT_EQ(s.on_tick(t0 + seconds(1)).act, Act::layout);
  ASSERT_TRUE(s.layout_request({{"42.0", "node[01-03]"}}, t0 + seconds(1)));
  s.on_output(t0 + seconds(2), Stream::out,
              "0: ddp-check: suspect node02: slow: task 0 is not rank 0 here\n"
              "2: ddp-check: suspect node03: missing-rank: no rank on node03 reached rank 0\n");
  s.on_layout(k_topology_layout);
  EXPECT_EQ(s.on_tick(t0 + seconds(3)).act, Act::none);  // read once
  std::vector<std::string> named;
  for (const ddp::Suspect& x : s.on_exit(1).heal_suspects) named.push_back(x.node);
  EXPECT_EQ(named, std::vector<std::string>{"node03"});

  // Without a layout (every release before 26.05 numbers task 0 on the first node): task 0.
  Supervisor old(o, JobEnv{"42", "", "", "", false, "", std::nullopt});
  old.started(t0);
  old.on_output(t0 + seconds(2), Stream::out,
                "0: ddp-check: suspect node02: slow: x\n2: ddp-check: suspect node03: slow: y\n");
  named.clear();
  for (const ddp::Suspect& x : old.on_exit(1).heal_suspects) named.push_back(x.node);
  EXPECT_EQ(named, std::vector<std::string>{"node02"});
}
