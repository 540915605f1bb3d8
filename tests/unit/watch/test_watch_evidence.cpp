// Which nodes a stall or a crash points at.
#include <gtest/gtest.h>

#include "ddp-watch/evidence.hpp"
#include "fixtures.hpp"

using namespace ddp::watch;

namespace {

Process process(int rank, const std::string& node, State state, const std::string& where = "") {
  Process p;
  p.task = rank;
  p.rank = rank;
  p.node = node;
  p.state = state;
  if (state == State::collective) p.collective = "all_reduce";
  p.where = {"/work/" + where, 57, "load_batch"};
  return p;
}

}  // namespace

TEST(WatchEvidence, StallNamesTheNodesElsewhere) {
  Layout layout;
  layout.node_of_task = {{0, "node01"}, {1, "node02"}, {2, "node03"}};
  const std::vector<Process> one_elsewhere = {process(0, "node01", State::collective),
                                              process(1, "node02", State::elsewhere, "train.py"),
                                              process(2, "node03", State::collective)};
  auto s = stall_suspects(one_elsewhere, {}, layout);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].node, "node02");
  EXPECT_EQ(s[0].fault, ddp::Fault::hang);
  EXPECT_EQ(s[0].evidence,
            "rank 1 at train.py:57 in load_batch while ranks 0,2 waited in all_reduce");
  EXPECT_EQ(s[0].signature, "train.py:57 in load_batch");

  // A rank that printed nothing: its node, without a signature (no place to compare).
  auto silent = stall_suspects({process(0, "node01", State::collective)}, {2}, layout);
  ASSERT_EQ(silent.size(), 1u);
  EXPECT_EQ(silent[0].node, "node03");
  EXPECT_EQ(silent[0].evidence,
            "rank 2 printed no stack (stuck in the kernel or a device) while rank 0 waited in "
            "all_reduce");
  EXPECT_EQ(silent[0].signature, "");

  // Nobody waits: the program hangs everywhere. Everybody waits: nothing tells the node.
  EXPECT_TRUE(stall_suspects({process(0, "node01", State::elsewhere, "a.py"),
                              process(1, "node02", State::elsewhere, "a.py")},
                             {}, layout)
                  .empty());
  EXPECT_TRUE(stall_suspects({process(0, "node01", State::collective),
                              process(1, "node02", State::collective)},
                             {}, layout)
                  .empty());
}

TEST(WatchEvidence, CrashNamesSigbusNotTheProgramsOwnDeaths) {
  CrashReader reader;
  for (const Line& l : fixtures::lines("srun: error: node02: task 1: Bus error\n"
                                       "srun: launch/slurm: _step_signal: Terminating StepId=3.0\n"
                                       "srun: error: node03: task 2: Bus error\n"
                                       "srun: error: node01: task 0: Exited with exit code 1\n")) {
    reader.add(l);
  }
  auto s = crash_suspects(reader.facts());
  ASSERT_EQ(s.size(), 1u);  // node03's came after srun began to end the step: collateral
  EXPECT_EQ(s[0].node, "node02");
  EXPECT_EQ(s[0].fault, ddp::Fault::hardware_signal);
  EXPECT_EQ(s[0].evidence, "task 1 died of SIGBUS (srun: Bus error)");

  CrashReader plain;
  for (const Line& l :
       fixtures::lines("srun: error: node01: tasks 0-2: Exited with exit code 1\n")) {
    plain.add(l);
  }
  EXPECT_TRUE(crash_suspects(plain.facts()).empty());

  // torchrun's failure table is a task's output: quoted in the summary, never a suspect.
  CrashReader table;
  for (const Line& l : fixtures::lines("0: Root Cause (first observed failure):\n"
                                       "0: [0]:\n"
                                       "0:   host      : node03\n"
                                       "0:   rank      : 2 (local_rank: 0)\n"
                                       "0:   exitcode  : -7 (pid: 42)\n"
                                       "0: ========================\n")) {
    table.add(l);
  }
  ASSERT_EQ(table.facts().workers.size(), 1u);
  EXPECT_TRUE(crash_suspects(table.facts()).empty());
}

TEST(WatchEvidence, SrunNamesTheNode) {
  auto s = srun_suspects("srun: error: Node failure on node[02-03]");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].node, "node02");
  EXPECT_EQ(s[1].node, "node03");
  EXPECT_EQ(s[1].fault, ddp::Fault::node_failure);
  EXPECT_EQ(s[1].evidence, "srun: Node failure on node[02-03]");
  // Recorded on the embedded cluster with the route from node03 to the head blackholed.
  auto launch = srun_suspects(
      "srun: error: Task launch for StepId=3.0 failed on node node03: Communication connection "
      "failure");
  ASSERT_EQ(launch.size(), 1u);
  EXPECT_EQ(launch[0].node, "node03");
  EXPECT_EQ(launch[0].fault, ddp::Fault::unreachable);
  EXPECT_EQ(launch[0].evidence,
            "srun: Task launch for StepId=3.0 failed on node node03: Communication connection "
            "failure");
  for (const char* other :
       {"srun: error: node02: task 1: Killed", "srun: error: Node failure on [",
        "srun: error: Application launch failed: Communication connection failure",
        "3: srun: error: Node failure on node01",
        "srun: error: Task launch for StepId=3.0 failed"}) {
    EXPECT_TRUE(srun_suspects(other).empty()) << other;
  }
}
