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
    Process p = classify(d, Layout{{{2, "node02"}}, true, {}});
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

// Under torchrun the helper's notices say which rank printed which of a task's dumps.
TEST(WatchVerdict, TorchrunRanksFromTheHelper) {
  std::string stuck =
      "1: Fatal Python error: Aborted\n1: \n1: Current thread 0x1 (most recent call first):\n"
      "1:   File \"/work/train.py\", line 8 in load_batch\n"
      "1:   File \"/work/train.py\", line 11 in <module>\n1: \n";
  std::string agent =
      "1: Fatal Python error: Aborted\n1: \n1: Current thread 0x2 (most recent call first):\n"
      "1:   File \"/usr/lib/python3/dist-packages/torch/distributed/elastic/agent/server/api.py\", "
      "line 850 in _invoke_run\n1:   File \"/usr/bin/torchrun\", line 33 in <module>\n1: \n";
  std::string out = fixtures::waiting(1) + stuck + agent;
  std::vector<StepProcess> notices = {{10, 0, 1, 2}, {11, 0, 1, 3}, {9, 0, 1, -1}};
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
