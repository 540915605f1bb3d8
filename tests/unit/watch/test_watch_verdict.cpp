#include <gtest/gtest.h>

#include <cstdio>

#include "ddp-watch/crash.hpp"
#include "ddp-watch/report.hpp"
#include "ddp-watch/verdict.hpp"
#include "fixtures.hpp"

using namespace ddp::watch;

namespace {

CrashFacts ends_of(const std::string& text, bool task_is_rank = true) {
  CrashReader reader;
  reader.set_task_is_rank(task_is_rank);
  for (const Line& l : fixtures::lines(text)) reader.add(l);
  return reader.facts();
}

// The helper's notice for a process of task 1 on node02 (rank -1: the launcher).
StepProcess notice(pid_t pid, int rank) {
  StepProcess p;
  p.pid = pid;
  p.task = 1;
  p.rank = rank;
  p.node = "node02";
  p.role = rank < 0 ? Role::launcher : Role::main;
  return p;
}

const std::string k_stuck =
    "1: Fatal Python error: Aborted\n1: \n1: Current thread 0x1 (most recent call first):\n"
    "1:   File \"/work/train.py\", line 8 in load_batch\n"
    "1:   File \"/work/train.py\", line 11 in <module>\n1: \n";
const std::string k_agent =
    "1: Fatal Python error: Aborted\n1: \n1: Current thread 0x2 (most recent call first):\n"
    "1:   File \"/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/api.py\", "
    "line 850 in _invoke_run\n1:   File \"/usr/bin/torchrun\", line 33 in <module>\n1: \n";

}  // namespace

TEST(WatchVerdict, NamesTheRankThatIsElsewhere) {
  std::string out;
  for (int t : {0, 1, 3, 5}) out += fixtures::waiting(t);
  out += fixtures::k_stall;
  StallReport r =
      stall_report(fixtures::lines(out), ends_of(fixtures::k_stall_ends), {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(r.verdict,
            "rank 4 on node03 at train.py:8 in load_batch; "
            "ranks 0-3,5 on node[01-03] wait in all_reduce at train.py:12 in <module>");
  EXPECT_EQ(r.dumps, 6u);
  EXPECT_NE(r.stacks.find("=== task 4, rank 4, node node03, elsewhere ==="), std::string::npos);
  EXPECT_NE(r.stacks.find("  File \"/work/train.py\", line 8 in load_batch"), std::string::npos);
}

TEST(WatchVerdict, ClassifiesByTheStack) {
  struct Case {
    std::vector<Frame> frames;  // innermost first
    State state;
    const char* collective;
    const char* where;
  };
  const Frame user{"/work/train.py", 80, "main"};
  const Case cases[] = {
      {{{"/x/torch/distributed/c10d_logger.py", 72, "wrapper"},
        {"/x/torch/distributed/distributed_c10d.py", 3, "barrier"},
        user},
       State::collective,
       "barrier",
       "/work/train.py"},
      {{{"/x/torch/autograd/__init__.py", 197, "backward"},
        {"/x/torch/_tensor.py", 4, "backward"},
        user},
       State::collective,
       "backward (gradient all-reduce)",
       "/work/train.py"},
      {{{"/usr/lib/python3.11/queue.py", 171, "get"},
        {"/x/torch/utils/data/dataloader.py", 9, "_get_data"},
        user},
       State::elsewhere,
       "",
       "/work/train.py"},
      {{{"/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/api.py", 1,
         "_invoke_run"},
        {"/usr/bin/torchrun", 33, "<module>"}},
       State::launcher,
       "",
       "/usr/bin/torchrun"},
      {{{"/usr/lib/python3.11/selectors.py", 415, "select"}},
       State::elsewhere,
       "",
       "/usr/lib/python3.11/selectors.py"},
  };
  for (const Case& c : cases) {
    Dump d;
    d.task = 2;
    d.threads.push_back(Thread{true, c.frames});
    Layout layout;
    layout.node_of_task = {{2, "node02"}};
    Process p = classify(d, layout);
    EXPECT_EQ(p.state, c.state) << c.where;
    EXPECT_EQ(p.collective, c.collective);
    EXPECT_EQ(p.where.file, c.where);
    EXPECT_EQ(p.node, "node02");
    EXPECT_EQ(p.rank, 2);
  }
}

TEST(WatchVerdict, EveryRankInTheSameCollective) {
  std::string out;
  for (int t : {0, 1}) out += fixtures::waiting(t);
  StallReport r = stall_report(fixtures::lines(out),
                               ends_of("srun: error: node01: tasks 0-1: Aborted\n"), {0, 1});
  EXPECT_EQ(r.verdict,
            "every rank waits in the same place, ranks 0,1 on node01 wait in all_reduce at "
            "train.py:12 in <module>: no rank is elsewhere (suspect the network or a device)");
}

TEST(WatchVerdict, ARankThatPrintsNothingIsNamed) {
  std::string out = fixtures::waiting(0) + fixtures::waiting(1);
  StallReport r = stall_report(fixtures::lines(out),
                               ends_of("srun: error: node01: tasks 0-1: Aborted\n"), {0, 1, 2});
  EXPECT_EQ(r.verdict.substr(0, 40), "rank 2 printed no stack (stuck in the ke");
  EXPECT_NE(r.verdict.find("; ranks 0,1 on node01 wait in all_reduce"), std::string::npos);
}

TEST(WatchVerdict, NothingPrinted) {
  StallReport r = stall_report({}, CrashFacts{}, {});
  EXPECT_EQ(r.verdict, "no stack was printed (is PYTHONFAULTHANDLER=1 reaching the tasks?)");
  EXPECT_EQ(r.dumps, 0u);
}

TEST(WatchVerdict, TorchrunWorkersAreCountedPerNode) {
  std::string out = fixtures::waiting(0) + fixtures::waiting(0);
  StallReport r = stall_report(fixtures::lines(out),
                               ends_of("srun: error: node01: task 0: Aborted\n", false), {0});
  EXPECT_EQ(r.verdict,
            "every rank waits in the same place, 2 processes on node01 wait in all_reduce at "
            "train.py:12 in <module>: no rank is elsewhere (suspect the network or a device)");
}

// Under torchrun without markers (stderr not a pipe) the helper's notices say, by position,
// which rank printed which of a task's dumps.
TEST(WatchVerdict, TorchrunRanksFromTheHelper) {
  std::string out = fixtures::waiting(1) + k_stuck + k_agent;
  std::vector<StepProcess> notices = {notice(10, 2), notice(11, 3), notice(9, -1)};
  CrashReader reader;
  reader.set_task_is_rank(false);
  reader.add(split_label("srun: error: node02: task 1: Aborted"));
  StallReport r = stall_report(fixtures::lines(out), reader.facts(), {1}, notices);
  EXPECT_EQ(r.verdict,
            "rank 3 on node02 at train.py:8 in load_batch; rank 2 on node02 waits in all_reduce at "
            "train.py:12 in <module>");
  EXPECT_NE(r.stacks.find("=== task 1, node node02, launcher ==="), std::string::npos);
}

TEST(WatchVerdict, OneHungRankAmong256NodesIsOneShortLine) {
  // 256 nodes x 4 ranks, rank 517 (node130) elsewhere, every other rank in all_reduce.
  std::vector<Process> processes;
  for (int r = 0; r < 1024; ++r) {
    Process p;
    p.task = p.rank = r;
    char node[16];
    std::snprintf(node, sizeof node, "node%03d", r / 4 + 1);
    p.node = node;
    p.state = r == 517 ? State::elsewhere : State::collective;
    p.collective = r == 517 ? "" : "all_reduce";
    p.where = r == 517 ? Frame{"/work/train.py", 8, "load_batch"}
                       : Frame{"/work/train.py", 12, "<module>"};
    p.innermost = p.where;
    processes.push_back(p);
  }
  std::string line = verdict(processes, {}, Layout{});
  EXPECT_EQ(line,
            "rank 517 on node130 at train.py:8 in load_batch; ranks 0-516,518-1023 on "
            "node[001-256] wait in all_reduce at train.py:12 in <module>");
  EXPECT_LT(line.size(), 300u);
}

// With the helper's markers in the stream, a worker that printed nothing (no longer Python) is
// named with its node, and the next worker's dump stays its own: by pid, not by position.
TEST(WatchVerdict, MarkedDumpsAreAttributedByPid) {
  std::string out = "1: ddp-watch-dump: pid 10\n1: ddp-watch-dump: pid 11\n" + k_stuck +
                    "1: ddp-watch-dump: pid 9\n" + k_agent;
  std::vector<StepProcess> notices = {notice(10, 2), notice(11, 3), notice(9, -1)};
  CrashReader reader;
  reader.set_task_is_rank(false);
  StallReport r = stall_report(fixtures::lines(out), reader.facts(), {1}, notices);
  EXPECT_EQ(r.verdict,
            "rank 2 on node02 printed no stack (stuck in the kernel or a device, or not Python); "
            "rank 3 on node02 at train.py:8 in load_batch");
  EXPECT_EQ(r.dumps, 2u);
  EXPECT_NE(r.stacks.find("=== task 1, rank 3, node node02, elsewhere ==="), std::string::npos);
  EXPECT_NE(r.stacks.find("=== task 1, node node02, launcher ==="), std::string::npos);
}

// A DataLoader worker that dumped anyway (the step was signalled as a whole) is its rank's
// child, not a rank elsewhere.
TEST(WatchVerdict, ADataLoaderWorkerIsAChildNotARank) {
  std::string worker =
      "0: Fatal Python error: Aborted\n0: \n0: Current thread 0x3 (most recent call first):\n"
      "0:   File \"/usr/lib/python3.11/multiprocessing/queues.py\", line 9 in get\n"
      "0:   File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py\", line 3 "
      "in _worker_loop\n"
      "0:   File \"/usr/lib/python3.11/multiprocessing/process.py\", line 108 in run\n"
      "0:   File \"/usr/lib/python3.11/multiprocessing/process.py\", line 314 in _bootstrap\n0: \n";
  std::string out = fixtures::waiting(0) + worker + fixtures::waiting(1);
  StallReport r = stall_report(fixtures::lines(out), CrashFacts{}, {0, 1});
  EXPECT_EQ(r.verdict,
            "every rank waits in the same place, ranks 0,1 on an unknown node wait in all_reduce "
            "at train.py:12 in <module>: no rank is elsewhere (suspect the network or a device)");
  EXPECT_NE(r.stacks.find("=== task 0, rank 0, a child process of the rank ==="),
            std::string::npos);
}
