// The respawn decision: the new step's nodes, the fall-back to the heal path, the cap, and the
// fault that follows the job to new nodes.
#include <gtest/gtest.h>

#include "ddp-watch/options.hpp"
#include "ddp-watch/respawn.hpp"

using namespace ddp::watch;

namespace {

using Nodes = std::vector<std::string>;

const Nodes k_alloc = {"node01", "node02", "node03", "node04"};

Suspect bus(const std::string& node) {
  return {node, ddp::Fault::hardware_signal, "task 1 died of SIGBUS (srun: Bus error)", ""};
}
Suspect hang(const std::string& node, const std::string& where) {
  return {node, ddp::Fault::hang, "rank 1 at " + where, where};
}

RespawnState first_step() {
  return {k_alloc, {"node01", "node02", "node03"}, {}};
}

}  // namespace

TEST(WatchRespawn, ChooseNodes) {
  EXPECT_EQ(choose_nodes(k_alloc, 3, {}), (Nodes{"node01", "node02", "node03"}));
  EXPECT_EQ(choose_nodes(k_alloc, 3, {"node02"}), (Nodes{"node01", "node03", "node04"}));
  EXPECT_EQ(choose_nodes(k_alloc, 3, {"node01", "node04"}), std::nullopt);
  std::string why;
  EXPECT_EQ(first_step_nodes(k_alloc, 1, why), (Nodes{"node01", "node02", "node03"}));
  EXPECT_EQ(first_step_nodes({"node01"}, 1, why), std::nullopt);
  EXPECT_EQ(why, "the job has 1 node, not more than 1 spare(s) (--spares 1)");
}

TEST(WatchRespawn, ANamedNodeIsReplacedByASpare) {
  RespawnDecision d = decide_respawn(first_step(), true, {bus("node02"), bus("node02")}, 1);
  EXPECT_EQ(d.action, RespawnAction::respawn);
  EXPECT_EQ(d.nodes, (Nodes{"node01", "node03", "node04"}));
  ASSERT_EQ(d.named.size(), 1u);
  EXPECT_EQ(d.named[0].node, "node02");
  // The spare takes the named node's place in the allocation's order.
  d = decide_respawn(first_step(), true, {bus("node01")}, 1);
  EXPECT_EQ(d.nodes, (Nodes{"node02", "node03", "node04"}));
}

TEST(WatchRespawn, NothingToDoOrTheHealPathDecides) {
  EXPECT_EQ(decide_respawn(first_step(), false, {bus("node02")}, 1).action, RespawnAction::none);
  RespawnDecision d = decide_respawn(first_step(), true, {}, 1);
  EXPECT_EQ(d.action, RespawnAction::fall_back);
  EXPECT_EQ(d.why, "no node of the step was named");
  // The spare is not the step's: a suspect on it is not acted on here.
  d = decide_respawn(first_step(), true, {bus("node04")}, 1);
  EXPECT_EQ(d.action, RespawnAction::fall_back);
  d = decide_respawn(first_step(), true, {bus("node01"), bus("node02"), bus("node03")}, 1);
  EXPECT_EQ(d.action, RespawnAction::fall_back);
  EXPECT_EQ(d.why, "every node of the step was named");
  // No respawn allowed (heal.max_respawns: 0).
  d = decide_respawn(first_step(), true, {bus("node02")}, 0);
  EXPECT_EQ(d.action, RespawnAction::fall_back);
  EXPECT_EQ(d.why, "respawned 0 time(s), the cap (heal.max_respawns: 0)");
}

TEST(WatchRespawn, SparesRunOutThenTheHealPathExcludesEveryNamedNode) {
  RespawnState s = {k_alloc, {"node01", "node03", "node04"}, {}};
  s.done.push_back({{bus("node02")}, {"node01", "node02", "node03"}, s.step, 2.0});
  RespawnDecision d = decide_respawn(s, true, {hang("node03", "x.py:3 in f")}, 2);
  EXPECT_EQ(d.action, RespawnAction::fall_back);
  EXPECT_EQ(d.why, "no spare node left (node[02-03] named of node[01-04])");
  ASSERT_EQ(d.named.size(), 2u);
  EXPECT_EQ(d.named[0].node, "node02");
  EXPECT_EQ(d.named[1].node, "node03");
  d = decide_respawn(s, true, {hang("node03", "x.py:3 in f")}, 1);
  EXPECT_EQ(d.why, "respawned 1 time(s), the cap (heal.max_respawns: 1)");
}

TEST(WatchRespawn, TheFaultFollowsTheJob) {
  RespawnState s = {k_alloc, {"node01", "node03", "node04"}, {}};
  s.done.push_back({{hang("node02", "x.py:3 in f")}, {"node01", "node02", "node03"}, s.step, 2});
  RespawnDecision d = decide_respawn(s, true, {hang("node03", "x.py:3 in f")}, 5);
  EXPECT_EQ(d.action, RespawnAction::fail);
  EXPECT_EQ(d.why,
            "the fault follows the job: hang at x.py:3 in f on node03 as on node02 before the "
            "respawn; it is the program's or its input's, not a node's: not respawning, not "
            "requeueing");
  // Elsewhere in the program: another fault, which a spare may heal.
  RespawnState big = s;
  big.allocation.push_back("node05");
  d = decide_respawn(big, true, {hang("node03", "y.py:9 in g")}, 5);
  EXPECT_EQ(d.action, RespawnAction::respawn);
  EXPECT_EQ(d.nodes, (Nodes{"node01", "node04", "node05"}));
  // A SIGBUS on the spare after one on node02: the same fault again.
  s.done[0].named = {bus("node02")};
  d = decide_respawn(s, true, {bus("node04")}, 5);
  EXPECT_EQ(d.action, RespawnAction::fail);
}

TEST(WatchRespawn, Lines) {
  RespawnDone done{
      {bus("node02")}, {"node01", "node02", "node03"}, {"node01", "node03", "node04"}, 2.25};
  // The time is ddp-watch's own part, and the line says so.
  EXPECT_EQ(respawn_line(done, 1, 1),
            "respawn 1 of at most 1: node02 (hardware-signal): task 1 died of SIGBUS (srun: Bus "
            "error); node[01-03] -> node[01,03-04]; the new step started 2.25 s after the failed "
            "one's srun exited");
  EXPECT_EQ(respawn_summary({}), "respawns: none");
  EXPECT_EQ(respawn_summary({done}),
            "respawns: 1: node02 (hardware-signal) node[01-03] -> node[01,03-04] started after "
            "2.25 s");
  done.check = RespawnCheck::passed;
  EXPECT_EQ(respawn_line(done, 1, 1),
            "respawn 1 of at most 1: node02 (hardware-signal): task 1 died of SIGBUS (srun: Bus "
            "error); node[01-03] -> node[01,03-04]; the new step started 2.25 s after the failed "
            "one's srun exited, its nodes checked in between");
}

TEST(WatchRespawn, ARespawnWhoseCheckFailedSaysSoAndWhatFollows) {
  RespawnDone done{{bus("node02")},
                   {"node01", "node02", "node03"},
                   {"node01", "node03", "node04"},
                   0,
                   RespawnCheck::failed};
  const std::string head =
      "respawn 1 of at most 2: node02 (hardware-signal): task 1 died of SIGBUS (srun: Bus "
      "error); node[01-03] -> node[01,03-04]: the check of node[01,03-04] failed, no step "
      "started there; ";
  RespawnDecision next;
  next.action = RespawnAction::fall_back;
  next.why = "no node of the step was named";
  EXPECT_EQ(check_failed_line(done, 1, 2, next),
            head + "not respawning: no node of the step was named; the heal path takes over");
  next.action = RespawnAction::respawn;
  EXPECT_EQ(check_failed_line(done, 1, 2, next), head + "respawning again");
  next.action = RespawnAction::fail;
  next.why = "the fault follows the job: x";
  EXPECT_EQ(check_failed_line(done, 1, 2, next), head + "the fault follows the job: x");
  // The summary does not claim the job moved there.
  RespawnDone second{{{"node04", ddp::Fault::unreachable, "no answer", ""}},
                     {"node01", "node03", "node04"},
                     {"node01", "node03", "node05"},
                     3.5,
                     RespawnCheck::passed};
  EXPECT_EQ(respawn_summary({done, second}),
            "respawns: 1: node02 (hardware-signal) node[01-03] -> node[01,03-04] check failed, "
            "not started; 2: node04 (unreachable) node[01,03-04] -> node[01,03,05] started after "
            "3.50 s");
}

TEST(WatchRespawn, OptionsRefuseWhatCannotWork) {
  auto parse = [](std::vector<std::string> args) { return parse_options(args); };
  auto o = parse({"--timeout=60", "--heal=r", "--spares=1", "--", "srun", "python3", "t.py"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->spares, 1);
  EXPECT_EQ(o->respawn_max, -1);
  o = parse({"--timeout=60", "--spares=1", "--", "srun", "python3"});
  ASSERT_FALSE(o);
  EXPECT_EQ(o.error().message,
            "ddp-watch: --spares needs --heal (the heal path names the nodes to replace)");
  o = parse({"--timeout=60", "--heal=r", "--spares=1", "--", "python3", "t.py"});
  ASSERT_FALSE(o);
  EXPECT_EQ(o.error().message,
            "ddp-watch: --spares needs the command to be srun, which takes the node list of "
            "each step (not \"python3\")");
  o = parse({"--timeout=60", "--heal=r", "--respawn-max=1", "--", "srun", "x"});
  ASSERT_FALSE(o);
}

TEST(WatchRespawn, TheCheckOfANewStepRunsUnderTheStepsDdpOption) {
  auto parse = [](std::vector<std::string> args) { return parse_options(args); };
  auto o = parse({"--timeout=60", "--heal=r", "--spares=1",
                  "--respawn-check=ddp-check  --timeout=60 --fabric=socket", "--", "srun", "-n",
                  "6", "--ddp=torchrun", "torchrun", "t.py"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->respawn_check, (Nodes{"ddp-check", "--timeout=60", "--fabric=socket"}));
  EXPECT_EQ(ddp_option(o->command), "--ddp=torchrun");
  // An option's value is not an option: "-J --ddp" names the job "--ddp".
  EXPECT_EQ(ddp_option({"srun", "-J", "--ddp", "python3", "--ddp"}), "");
  EXPECT_EQ(ddp_option({"srun", "python3", "--ddp"}), "");
  EXPECT_EQ(ddp_option({"torchrun", "--ddp"}), "");
  EXPECT_EQ(ddp_option({"srun", "--ddp", "python3"}), "--ddp");

  o = parse({"--timeout=60", "--heal=r", "--spares=1", "--respawn-check=ddp-check", "--", "srun",
             "python3"});
  ASSERT_FALSE(o);
  EXPECT_EQ(o.error().message,
            "ddp-watch: --respawn-check needs srun --ddp in the command (the check runs under "
            "the plugin, as the step does) or --check-wrapper N (under the first N words of "
            "the step's program, its per-task setup)");
  o = parse({"--timeout=60", "--heal=r", "--respawn-check=ddp-check", "--", "srun", "--ddp", "x"});
  ASSERT_FALSE(o);
  EXPECT_EQ(o.error().message,
            "ddp-watch: --respawn-check needs --spares (it checks the nodes of a new step)");
}

TEST(WatchRespawn, TheCheckOfANewStepIsThePreflightOnItsNodes) {
  auto o =
      parse_options({"--timeout=60", "--heal=r", "--spares=1",
                     "--respawn-check=ddp-check --timeout=60", "--check-tasks-per-node=2", "--",
                     "srun", "-N", "3", "--ddp", "--cpus-per-task=8", "python3", "t.py"});
  ASSERT_TRUE(o) << o.error().message;
  // srun's layout on the nodes, the step's --ddp and none of its other options.
  EXPECT_EQ(
      check_command(*o, {"node01", "node03", "node04"}),
      (Nodes{"srun", "--nodelist=node[01,03-04]", "--nodes=3", "--ntasks=6", "--ntasks-per-node=2",
             "--kill-on-bad-exit=1", "--ddp", "ddp-check", "--timeout=60"}));
}

TEST(WatchRespawn, WithoutThePluginTheCheckRunsUnderTheStepsWrapper) {
  // ddpgen's per-task setup without the plugin: bash -c CODE ddpgen-task MODE N FIRST SIZE.
  const Nodes wrapper = {"bash",  "-c",   "setup; exec \"$@\"", "ddpgen-task", "tasks", "4",
                         "20000", "11000"};
  auto args = [&](Nodes srun_options) {
    Nodes a = {"--timeout=60",
               "--heal=r",
               "--spares=1",
               "--respawn-check=ddp-check --timeout=60",
               "--first-check",
               "--check-wrapper=8",
               "--",
               "srun"};
    a.insert(a.end(), srun_options.begin(), srun_options.end());
    a.insert(a.end(), wrapper.begin(), wrapper.end());
    a.insert(a.end(), {"python3", "t.py"});
    return a;
  };
  Nodes expected = {"srun",       "--nodelist=node[01,03-04]", "--nodes=3",
                    "--ntasks=3", "--ntasks-per-node=1",       "--kill-on-bad-exit=1"};
  expected.insert(expected.end(), wrapper.begin(), wrapper.end());
  expected.insert(expected.end(), {"ddp-check", "--timeout=60"});
  // srun's options with their values apart (-N 3, --ntasks 12), joined, and after a "--".
  for (const Nodes& srun_options :
       {Nodes{"-N", "3", "--ntasks", "12", "--kill-on-bad-exit=1"}, Nodes{"-N3", "--ntasks=12"},
        Nodes{"-J", "--ddp", "--"}, Nodes{}}) {
    auto o = parse_options(args(srun_options));
    ASSERT_TRUE(o) << o.error().message;
    EXPECT_EQ(o->check_wrapper, 8);
    EXPECT_EQ(check_command(*o, {"node01", "node03", "node04"}), expected);
  }
}

TEST(WatchRespawn, TheCheckWrapperIsRefusedWhereItCannotWork) {
  const auto refusal = [](Nodes a) {
    auto o = parse_options(a);
    return o ? std::string("accepted") : o.error().message;
  };
  EXPECT_EQ(refusal({"--timeout=60", "--heal=r", "--spares=1", "--check-wrapper=2", "--", "srun",
                     "bash", "-c", "x", "python3"}),
            "ddp-watch: --check-wrapper needs --respawn-check (the check it wraps)");
  EXPECT_EQ(refusal({"--timeout=60", "--heal=r", "--spares=1", "--respawn-check=ddp-check",
                     "--check-wrapper=2", "--", "srun", "--ddp", "bash", "-c", "x"}),
            "ddp-watch: --check-wrapper and srun --ddp both set up the check's ranks: give one");
  // The wrapper's words and at least the program it runs.
  EXPECT_EQ(refusal({"--timeout=60", "--heal=r", "--spares=1", "--respawn-check=ddp-check",
                     "--check-wrapper=3", "--", "srun", "-N", "3", "bash", "-c", "x"}),
            "ddp-watch: --check-wrapper 3: the step's program after srun's options has 3 "
            "word(s), none left for the program the wrapper runs");
  EXPECT_EQ(refusal({"--timeout=60", "--heal=r", "--spares=1", "--respawn-check=ddp-check",
                     "--check-wrapper=3", "--", "srun", "-N", "3", "bash", "-c", "x", "python3"}),
            "accepted");
  EXPECT_NE(refusal({"--timeout=60", "--heal=r", "--spares=1", "--respawn-check=ddp-check",
                     "--check-wrapper=0", "--", "srun", "bash", "-c", "x", "python3"}),
            "accepted");
  // Not srun: the step cannot be given its nodes at all, which is said first.
  EXPECT_EQ(refusal({"--timeout=60", "--heal=r", "--spares=1", "--respawn-check=ddp-check",
                     "--check-wrapper=1", "--", "bash", "-c", "x", "python3"}),
            "ddp-watch: --spares needs the command to be srun, which takes the node list of "
            "each step (not \"bash\")");
}

namespace {

Suspect unreachable(const std::string& node) {
  return {node, ddp::Fault::unreachable, "no hello from " + node + " in 5 s", ""};
}

}  // namespace

TEST(WatchRespawn, TheFirstStepAvoidsWhatTheCheckOfEveryNodeNamed) {
  // Passed: nothing to decide, the first step keeps the first nodes.
  EXPECT_EQ(decide_first_step(k_alloc, 1, false, {}, 1).action, RespawnAction::none);
  // One node named, one spare: the first step takes the spare, the named node's evidence kept.
  RespawnDecision d =
      decide_first_step(k_alloc, 1, true, {unreachable("node02"), unreachable("node02")}, 1);
  EXPECT_EQ(d.action, RespawnAction::respawn);
  EXPECT_EQ(d.nodes, (Nodes{"node01", "node03", "node04"}));
  ASSERT_EQ(d.named.size(), 1u);
  EXPECT_EQ(d.named[0].evidence, "no hello from node02 in 5 s");
  // The spare itself named: the first nodes, which passed.
  d = decide_first_step(k_alloc, 1, true, {unreachable("node04")}, 1);
  EXPECT_EQ(d.action, RespawnAction::respawn);
  EXPECT_EQ(d.nodes, (Nodes{"node01", "node02", "node03"}));
  // Two spares, two named.
  d = decide_first_step(k_alloc, 2, true, {unreachable("node01"), unreachable("node03")}, 2);
  EXPECT_EQ(d.action, RespawnAction::respawn);
  EXPECT_EQ(d.nodes, (Nodes{"node02", "node04"}));
}

TEST(WatchRespawn, TheCheckOfEveryNodeFallsBackToTheHealPath) {
  RespawnDecision d = decide_first_step(k_alloc, 1, true, {}, 1);
  EXPECT_EQ(d.action, RespawnAction::fall_back);
  EXPECT_EQ(d.why, "the check of every node named none");
  d = decide_first_step(k_alloc, 1, true, {unreachable("node02"), unreachable("node03")}, 1);
  EXPECT_EQ(d.action, RespawnAction::fall_back);
  EXPECT_EQ(d.why, "the check named 2 nodes, more than the 1 spare(s)");
  ASSERT_EQ(d.named.size(), 2u);  // every node named, for the heal path
  d = decide_first_step(k_alloc, 1, true, {unreachable("node02")}, 0);
  EXPECT_EQ(d.action, RespawnAction::fall_back);
  EXPECT_EQ(d.why, "no respawn allowed (heal.max_respawns: 0)");
  // A node that is not the job's is not acted on.
  d = decide_first_step(k_alloc, 1, true, {unreachable("node09")}, 1);
  EXPECT_EQ(d.action, RespawnAction::fall_back);
  EXPECT_EQ(d.why, "the check of every node named none");
}

TEST(WatchRespawn, TheFirstStepsAvoidanceCountsButIsNoFaultThatFollows) {
  RespawnState s = {k_alloc, {"node01", "node03", "node04"}, {}};
  RespawnDone first{{unreachable("node02")}, {"node01", "node02", "node03"}, s.step, 0.5};
  first.first = true;
  s.done.push_back(first);
  // The cap counts it.
  RespawnDecision d = decide_respawn(s, true, {bus("node03")}, 1);
  EXPECT_EQ(d.action, RespawnAction::fall_back);
  EXPECT_EQ(d.why, "respawned 1 time(s), the cap (heal.max_respawns: 1)");
  // Another node unreachable later is that node's fault, not the check's finding following.
  s.allocation.push_back("node05");
  d = decide_respawn(s, true, {unreachable("node04")}, 2);
  EXPECT_EQ(d.action, RespawnAction::respawn);
  EXPECT_EQ(d.nodes, (Nodes{"node01", "node03", "node05"}));
  // Its lines say it came before the first step, and what its time counts from.
  first.check = RespawnCheck::passed;
  EXPECT_EQ(respawn_line(first, 1, 1),
            "respawn 1 of at most 1 before the first step: node02 (unreachable): no hello from "
            "node02 in 5 s; node[01-03] -> node[01,03-04]; the first step started 0.50 s after "
            "the check of every node ended, its nodes checked in between");
  EXPECT_EQ(respawn_summary({first}),
            "respawns: 1 (before the first step): node02 (unreachable) node[01-03] -> "
            "node[01,03-04] started after 0.50 s");
}

TEST(WatchRespawn, TheFirstCheckNeedsTheCheck) {
  auto o = parse_options({"--timeout=60", "--heal=r", "--spares=1", "--first-check", "--", "srun",
                          "--ddp", "python3"});
  ASSERT_FALSE(o);
  EXPECT_EQ(o.error().message,
            "ddp-watch: --first-check needs --respawn-check (the check it runs on every node)");
  o = parse_options({"--timeout=60", "--heal=r", "--spares=1", "--respawn-check=ddp-check",
                     "--first-check", "--", "srun", "--ddp", "python3"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_TRUE(o->first_check);
  // Harmless when not given.
  o = parse_options({"--timeout=60", "--heal=r", "--spares=1", "--respawn-check=ddp-check", "--",
                     "srun", "--ddp", "python3"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_FALSE(o->first_check);
}

TEST(WatchRespawn, TheChecksTasksPerNodeShapeTheCheck) {
  auto o = parse_options({"--timeout=60", "--heal=r", "--spares=1", "--check-tasks-per-node=2",
                          "--", "srun", "--ddp", "python3"});
  ASSERT_FALSE(o);
  EXPECT_EQ(o.error().message,
            "ddp-watch: --check-tasks-per-node needs --respawn-check (the check it shapes)");
  o = parse_options({"--timeout=60", "--heal=r", "--spares=1", "--respawn-check=ddp-check",
                     "--check-tasks-per-node=0", "--", "srun", "--ddp", "python3"});
  ASSERT_FALSE(o);
  o = parse_options({"--timeout=60", "--heal=r", "--spares=1", "--respawn-check=ddp-check",
                     "--check-tasks-per-node=8", "--", "srun", "--ddp", "python3"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->check_tasks_per_node, 8);
}
