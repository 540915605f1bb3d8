#include <gtest/gtest.h>

#include "ddp-watch/dump_plan.hpp"

using namespace ddp::watch;

namespace {

StepProcess proc(pid_t pid, pid_t parent, int task, int rank, bool python = true) {
  StepProcess p;
  p.pid = pid;
  p.parent = parent;
  p.task = task;
  p.rank = rank;
  p.node = "node02";
  p.python = python;
  return p;
}

std::vector<pid_t> pids(const std::vector<StepProcess>& processes) {
  std::vector<pid_t> out;
  for (const StepProcess& p : processes) out.push_back(p.pid);
  return out;
}

}  // namespace

// torchrun (pid 100, no RANK) with workers of rank 3 and 2, rank 2's two DataLoader workers
// (same RANK, parent rank 2), and a stray process of the step (pid 50).
TEST(WatchDumpPlan, RanksByRankThenLaunchersTheirChildrenLeftFrozen) {
  DumpPlan plan = plan_dump({proc(100, 1, 1, -1), proc(102, 100, 1, 3), proc(101, 100, 1, 2),
                             proc(50, 1, 1, -1), proc(110, 101, 1, 2), proc(111, 101, 1, 2)});
  EXPECT_EQ(pids(plan.stop).size(), 6u);
  EXPECT_EQ(pids(plan.dump), (std::vector<pid_t>{101, 102, 50, 100}));
  EXPECT_EQ(plan.dump[0].role, Role::main);
  EXPECT_EQ(plan.dump[3].role, Role::launcher);
  ASSERT_EQ(pids(plan.children), (std::vector<pid_t>{110, 111}));
  EXPECT_EQ(plan.children[0].owner, 101);
  EXPECT_EQ(plan.children[0].rank, 2);
  EXPECT_TRUE(plan_dump({}).dump.empty());
}

// srun tasks: a shell around the rank's Python carries the same RANK; the Python is the rank's.
// Without any RANK (no plugin), the first process of each task is.
TEST(WatchDumpPlan, TheRanksOwnProcessIsItsOutermostPython) {
  DumpPlan wrapped = plan_dump(
      {proc(10, 1, 0, 0, false), proc(11, 10, 0, 0), proc(12, 11, 0, 0), proc(20, 1, 1, 1)});
  EXPECT_EQ(pids(wrapped.dump), (std::vector<pid_t>{11, 20, 10}));
  EXPECT_EQ(wrapped.dump[2].role, Role::launcher);
  EXPECT_EQ(pids(wrapped.children), (std::vector<pid_t>{12}));
  DumpPlan plain = plan_dump({proc(10, 1, 0, -1), proc(12, 10, 0, -1), proc(20, 1, 1, -1)});
  EXPECT_EQ(pids(plain.dump), (std::vector<pid_t>{10, 20}));
  EXPECT_EQ(pids(plain.children), (std::vector<pid_t>{12}));
  // A parent loop (a pid table read while it changes) ends; neither is a rank's own.
  DumpPlan loop = plan_dump({proc(30, 31, 0, 0), proc(31, 30, 0, 0)});
  ASSERT_EQ(loop.dump.size(), 2u);
  EXPECT_EQ(loop.dump[0].role, Role::launcher);
}

TEST(WatchDumpPlan, NoticesAndMarkersRoundTrip) {
  StepProcess p = proc(4242, 7, 1, 3);
  std::string line = dump_notice(p);
  EXPECT_EQ(line, "ddp-watch-dump: task 1 rank 3 pid 4242 node node02 main");
  StepProcess back;
  ASSERT_TRUE(parse_dump_notice(line, back));
  EXPECT_EQ(back.task, 1);
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.pid, 4242);
  EXPECT_EQ(back.node, "node02");
  EXPECT_EQ(back.role, Role::main);
  p.role = Role::launcher;
  p.node = "";
  ASSERT_TRUE(parse_dump_notice(dump_notice(p), back));
  EXPECT_EQ(back.role, Role::launcher);
  EXPECT_EQ(back.node, "");
  for (const char* other :
       {"ddp-watch-dump: task 1 rank 3 pid 4242", "ddp-watch-dump: task 1 rank 3 pid 4 node n x",
        "ddp-watch-dump: task 1 rank 3 pid 0 node n main", "step 5", ""}) {
    EXPECT_FALSE(parse_dump_notice(other, back)) << other;
  }
  EXPECT_EQ(dump_marker(4242), "ddp-watch-dump: pid 4242");
  EXPECT_EQ(parse_dump_marker("ddp-watch-dump: pid 4242"), 4242);
  EXPECT_EQ(parse_dump_marker("ddp-watch-dump: pid x"), 0);
  EXPECT_EQ(parse_dump_marker("ddp-watch-dump: pid -3"), 0);
  EXPECT_EQ(parse_dump_marker("3: ddp-watch-dump: pid 4"), 0);
}

// The table as `scontrol listpids 4.0 node02` prints it (Slurm 24.11): the tasks with their
// ids, a process a task started (a DataLoader worker) with "-".
TEST(DumpPlan, ListpidsGivesTheStepsTrackedProcessesOnly) {
  const std::string table =
      "PID      JOBID    STEPID   LOCALID GLOBALID\n"
      "19001    4        0        0       2        \n"
      "19002    4        0        1       3        \n"
      "19010    4        0        -       -        \n"
      "19020    4        1        0       0        \n"
      "19030    40       0        0       0        \n";
  EXPECT_EQ(parse_listpids(table, "4", "0"), (std::vector<pid_t>{19001, 19002, 19010}));
  EXPECT_EQ(parse_listpids(table, "4", "1"), (std::vector<pid_t>{19020}));
  EXPECT_TRUE(parse_listpids(table, "4", "2").empty());
  // scontrol's messages on stderr, read with the table, come before it and are not rows.
  EXPECT_EQ(parse_listpids("scontrol: warning: x 4 0\n" + table, "4", "0"),
            (std::vector<pid_t>{19001, 19002, 19010}));
  EXPECT_TRUE(parse_listpids("StepId=4.0 does not exist on node node02.\n", "4", "0").empty());
  // Only listpids' own table counts: text without its header, or rows with a bad pid, give
  // nothing.
  EXPECT_TRUE(parse_listpids("19001 4 0 0 2\n", "4", "0").empty());
  EXPECT_TRUE(parse_listpids("", "4", "0").empty());
  EXPECT_TRUE(parse_listpids(
                  "PID JOBID STEPID LOCALID GLOBALID\nx 4 0 0 0\n-3 4 0 0 0\n0 4 0 0 0\n", "4", "0")
                  .empty());
}
