#include <gtest/gtest.h>

#include "ddp-watch/crash.hpp"
#include "fixtures.hpp"

using namespace ddp::watch;

namespace {

std::string summary_of(const std::string& text, bool task_is_rank = true) {
  CrashReader reader;
  reader.set_task_is_rank(task_is_rank);
  for (const Line& l : fixtures::lines(text)) reader.add(l);
  return crash_summary(reader.facts());
}

}  // namespace

TEST(WatchCrash, ParsesSrunTaskEnds) {
  struct Case {
    const char* line;
    const char* node;
    std::vector<int> tasks;
    int exit_code;
    int signal;
    bool oom;
  };
  const Case cases[] = {
      {"srun: error: node02: task 3: Killed", "node02", {3}, -1, 9, false},
      {"srun: error: node01: tasks 0-1: Exited with exit code 1", "node01", {0, 1}, 1, 0, false},
      {"srun: error: n-1: tasks 0,4-5: Aborted (core dumped)", "n-1", {0, 4, 5}, -1, 6, false},
      {"srun: error: node02: task 3: Out Of Memory", "node02", {3}, -1, 9, true},
      {"srun: error: node02: task 3: Segmentation fault", "node02", {3}, -1, 11, false},
  };
  for (const Case& c : cases) {
    auto end = parse_task_end(c.line);
    ASSERT_TRUE(end) << c.line;
    EXPECT_EQ(end->node, c.node);
    EXPECT_EQ(end->tasks, c.tasks);
    EXPECT_EQ(end->exit_code, c.exit_code);
    EXPECT_EQ(end->signal, c.signal);
    EXPECT_EQ(end->oom, c.oom);
  }
  for (const char* other :
       {"srun: error: Unable to create step", "srun: error: node02: task 3: Weird",
        "3: srun: error: node02: task x: Killed", "srun: error: : task 1: Killed"}) {
    EXPECT_FALSE(parse_task_end(other)) << other;
  }
  EXPECT_EQ(signal_name(9), "SIGKILL");
  EXPECT_EQ(signal_name(64), "signal 64");
}

// srun --kill-on-bad-exit: the killed task first, then srun ends the others.
TEST(WatchCrash, KillOnBadExit) {
  EXPECT_EQ(
      summary_of("4: RuntimeError: [pair.cc:598] Connection closed by peer [10.77.8.12]:14730\n"
                 "srun: error: node02: task 3: Killed\n"
                 "srun: launch/slurm: _step_signal: Terminating StepId=3.0\n"
                 "0: slurmstepd-node01: error: *** STEP 3.0 ON node01 CANCELLED AT 2026 ***\n"
                 "srun: error: node01: task 1: Terminated\n"
                 "srun: error: node02: task 2: Terminated\n"
                 "srun: error: node03: tasks 4-5: Terminated\n"
                 "srun: error: node01: task 0: Terminated\n"),
      "first failure: rank 3 on node02, killed by SIGKILL (signal 9); collateral: ranks "
      "0-2,4,5 (ended after it: lost a peer, or stopped by srun)");
}

// Without it the others fail on their own, losing their peer; their lines may come first.
TEST(WatchCrash, PeersFailAfterTheCulprit) {
  EXPECT_EQ(summary_of("4: RuntimeError: [pair.cc:598] Connection closed by peer [10.77.8.12]:6\n"
                       "2: RuntimeError: [pair.cc:598] Connection closed by peer [10.77.8.12]:1\n"
                       "srun: error: node02: task 2: Exited with exit code 1\n"
                       "srun: error: node03: task 4: Exited with exit code 1\n"
                       "srun: error: node02: task 3: Killed\n"),
            "first failure: rank 3 on node02, killed by SIGKILL (signal 9); collateral: ranks "
            "2,4 (ended after it: lost a peer, or stopped by srun)");
}

TEST(WatchCrash, AnExceptionIsNamed) {
  EXPECT_EQ(summary_of("1: ValueError: batch 7 is empty\n"
                       "srun: error: node01: task 1: Exited with exit code 1\n"
                       "0: RuntimeError: Connection reset by peer\n"
                       "srun: error: node01: task 0: Exited with exit code 1\n"),
            "first failure: rank 1 on node01, exited with code 1, its last error \"ValueError: "
            "batch 7 is empty\"; collateral: rank 0 (ended after it: lost a peer, or stopped by "
            "srun)");
}

TEST(WatchCrash, OutOfMemory) {
  EXPECT_EQ(
      summary_of("slurmstepd: error: Detected 1 oom_kill event in StepId=7.0.\n"
                 "srun: error: node03: task 5: Killed\n"),
      "first failure: rank 5 on node03, killed by the kernel's out-of-memory killer (SIGKILL)");
}

// torchrun's agents exit 1; their failure tables name the worker killed by a signal.
TEST(WatchCrash, TorchrunTables) {
  std::string table2 =
      "2: Failures:\n2: [1]:\n2:   time      : 2026-11-23_14:19:21\n2:   host      : node03\n"
      "2:   rank      : 5 (local_rank: 1)\n2:   exitcode  : 1 (pid: 31956)\n"
      "2: ------------------------------------------------------------\n"
      "2: Root Cause (first observed failure):\n2: [0]:\n2:   time      : 2026-11-23_14:19:21\n"
      "2:   host      : node03\n2:   rank      : 4 (local_rank: 0)\n2:   exitcode  : 1 (pid: 1)\n"
      "2: ============================================================\n";
  std::string table1 =
      "1: Root Cause (first observed failure):\n1: [0]:\n1:   time      : 2026-11-23_14:19:16\n"
      "1:   host      : node02\n1:   rank      : 3 (local_rank: 1)\n"
      "1:   exitcode  : -9 (pid: 31963)\n1:   traceback : Signal 9 (SIGKILL) received by PID 3\n"
      "1: ======================================================\n";
  std::string ends =
      "srun: error: node02: task 1: Exited with exit code 1\n"
      "srun: error: node03: task 2: Exited with exit code 1\n";
  EXPECT_EQ(summary_of(table2 + table1 + ends, false),
            "first failure: rank 3 on node02, killed by SIGKILL (signal 9); collateral: ranks "
            "4,5 (ended after it: lost a peer, or stopped by srun)");
  // Without the tables, the agents' tasks are all there is.
  EXPECT_EQ(summary_of(ends, false),
            "first failure: task 1 on node02, exited with code 1; collateral: task 2 (ended after "
            "it: lost a peer, or stopped by srun)");
}

// Newer torch prints the workers its agent stopped (SIGTERM) under "Failures:" before the
// root cause, all in the same second: the root cause is still the first failure.
TEST(WatchCrash, TorchrunRootCauseAfterTheWorkersItsAgentStopped) {
  std::string table =
      "1: Failures:\n1: [1]:\n1:   time      : 2026-11-26_00:16:12\n1:   host      : node02\n"
      "1:   rank      : 2 (local_rank: 0)\n1:   exitcode  : -15 (pid: 19754)  (SIGTERM)\n"
      "1: -------------------------------------------------------\n"
      "1: Root Cause (first observed failure):\n1: [0]:\n1:   time      : 2026-11-26_00:16:12\n"
      "1:   host      : node02\n1:   rank      : 3 (local_rank: 1)\n"
      "1:   exitcode  : -9 (pid: 19757)  (SIGKILL)\n"
      "1: =======================================================\n";
  EXPECT_EQ(summary_of(table + "srun: error: node02: task 1: Exited with exit code 1\n", false),
            "first failure: rank 3 on node02, killed by SIGKILL (signal 9); collateral: rank 2 "
            "(ended after it: lost a peer, or stopped by srun)");
}

TEST(WatchCrash, NothingFailed) {
  EXPECT_EQ(summary_of("0: step 1\n"), "");
}

// What a task prints is never read as srun's word: its own "Job step aborted" does not make the
// culprit collateral, and "oom-kill" in its output does not make a SIGKILL an out-of-memory kill.
TEST(WatchCrash, TaskOutputIsNotAFact) {
  EXPECT_EQ(summary_of("1: srun: Job step aborted: Waiting up to 32 seconds\n"
                       "2: resuming after oom-kill of the old job\n"
                       "0: *** STEP 3.0 ON node01 CANCELLED AT 2026 ***\n"
                       "srun: error: node02: task 3: Killed\n"),
            "first failure: rank 3 on node02, killed by SIGKILL (signal 9)");
  // srun's and slurmstepd's own lines are (slurmstepd's may come under a task's label).
  EXPECT_EQ(summary_of("srun: Job step aborted: Waiting up to 32 seconds for job step\n"
                       "srun: error: node02: task 3: Killed\n"),
            "first failure: rank 3 on node02, killed by SIGKILL (signal 9)");
  EXPECT_EQ(
      summary_of("1: slurmstepd: error: Detected 1 oom_kill event in StepId=7.0.\n"
                 "srun: error: node03: task 5: Killed\n"),
      "first failure: rank 5 on node03, killed by the kernel's out-of-memory killer (SIGKILL)");
  CrashReader reader;
  for (const Line& l :
       fixtures::lines("1: srun: Job step aborted: Waiting up to 32 seconds\n"
                       "0: *** STEP 3.0 ON node01 CANCELLED AT 2026 ***\n"
                       "srun: error: node02: task 3: Exited with exit code 2\n"
                       "0: slurmstepd: error: *** STEP 3.0 ON node01 CANCELLED AT 2026 ***\n"
                       "srun: error: node01: task 0: Terminated\n")) {
    reader.add(l);
  }
  ASSERT_EQ(reader.facts().ends.size(), 2u);
  EXPECT_FALSE(reader.facts().ends[0].after_stop);  // the tasks' own words
  EXPECT_TRUE(reader.facts().ends[1].after_stop);   // slurmstepd's
  EXPECT_TRUE(is_stepd_line("slurmstepd-node01: error: *** STEP 3.0 ON node01 CANCELLED"));
  EXPECT_TRUE(is_stepd_line("slurmstepd: error: Detected 1 oom_kill event"));
  EXPECT_FALSE(is_stepd_line("slurmstepd-a b: error"));
  EXPECT_FALSE(is_stepd_line("myslurmstepd: error"));
}

// A command that is not srun prints no srun lines: a forged one is ignored, and under srun a
// task list beyond any real step is refused rather than expanded (1M ids cost 200 MB).
TEST(WatchCrash, TaskListsAreBounded) {
  CrashReader other;
  other.set_srun(false);
  other.add(Line{-1, "srun: error: n: tasks 0-1048576: Killed"});
  EXPECT_TRUE(other.facts().ends.empty());
  EXPECT_EQ(summary_of("srun: error: n: tasks 0-1048576: Killed\n"), "");
  EXPECT_FALSE(parse_task_end("srun: error: n: tasks 0-131072: Killed"));
  auto most = parse_task_end("srun: error: n: tasks 0-131071: Killed");
  ASSERT_TRUE(most);
  EXPECT_EQ(most->tasks.size(), 131072u);
  CrashReader many;
  many.add(Line{-1, "srun: error: n: tasks 0-131071: Killed"});
  many.add(Line{-1, "srun: error: m: task 7: Killed"});  // past the total: dropped
  EXPECT_EQ(many.facts().ends.size(), 1u);
  EXPECT_EQ(crash_summary(many.facts()).substr(0, 60),
            "first failure: rank 0 on n, killed by SIGKILL (signal 9); co");
}

// Two agents print their tables at once, line by line: two entries, not one merged; an exit
// code that is not a signal's (INT_MIN) is a code.
TEST(WatchCrash, TorchrunTablesOfTwoAgentsAtOnce) {
  std::string out =
      "1: Root Cause (first observed failure):\n2: Root Cause (first observed failure):\n"
      "1: [0]:\n2: [0]:\n1:   time      : 2026-11-23_14:19:16\n2:   time      : "
      "2026-11-23_14:19:20\n1:   host      : node02\n2:   host      : node03\n"
      "1:   rank      : 3 (local_rank: 1)\n2:   rank      : 5 (local_rank: 1)\n"
      "1:   exitcode  : -2147483648 (pid: 1)\n2:   exitcode  : -9 (pid: 2)\n"
      "1: ======\n2: ======\n";
  EXPECT_EQ(summary_of(out, false),
            "first failure: rank 5 on node03, killed by SIGKILL (signal 9); collateral: rank 3 "
            "(ended after it: lost a peer, or stopped by srun)");
  CrashReader reader;
  reader.set_task_is_rank(false);
  for (const Line& l : fixtures::lines(out)) reader.add(l);
  ASSERT_EQ(reader.facts().workers.size(), 2u);
  EXPECT_EQ(reader.facts().workers[0].exit_code, -2147483648);
  std::string alone =
      "1: Root Cause (first observed failure):\n1: [0]:\n1:   host      : n\n"
      "1:   rank      : 3 (local_rank: 1)\n1:   exitcode  : -2147483648 (pid: 1)\n"
      "1: ======\n";
  EXPECT_EQ(summary_of(alone, false), "first failure: rank 3 on n, exited with code -2147483648");
  // Entries outside a table are a task's own text.
  EXPECT_EQ(summary_of("1: [0]:\n1:   rank      : 3\n1:   exitcode  : -9\n1: ======\n", false), "");
}
