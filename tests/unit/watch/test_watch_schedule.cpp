// The watcher's clock (stall, then kill after the grace), the step list from squeue, and the
// split that puts every dump on a line of its own.
#include <gtest/gtest.h>

#include "ddp-watch/schedule.hpp"
#include "ddp-watch/traceback.hpp"

using namespace ddp::watch;
using std::chrono::seconds;

TEST(WatchSchedule, StartupThenTimeoutThenGraceThenNothing) {
  const Clock::time_point t0{};
  Schedule s(20, 120, 10, t0);
  EXPECT_EQ(s.due(t0 + seconds(119)), Due::nothing);  // the startup allowance
  EXPECT_EQ(s.limit_s(), 120);
  EXPECT_EQ(s.due(t0 + seconds(120)), Due::stall);
  s.progress(t0 + seconds(100));  // a byte arrived
  EXPECT_EQ(s.limit_s(), 20);
  EXPECT_EQ(s.due(t0 + seconds(119)), Due::nothing);
  EXPECT_EQ(s.due(t0 + seconds(120)), Due::stall);
  s.stalled(t0 + seconds(121));
  EXPECT_TRUE(s.is_stalled());
  s.progress(t0 + seconds(125));  // dumps arriving do not postpone the kill
  EXPECT_EQ(s.due(t0 + seconds(130)), Due::nothing);
  EXPECT_EQ(s.due(t0 + seconds(131)), Due::kill);
  s.killed();
  EXPECT_EQ(s.due(t0 + seconds(1000)), Due::nothing);
}

TEST(WatchSchedule, StartupDefaultsToTheTimeoutAndTheHelperGetsPartOfTheGrace) {
  const Clock::time_point t0{};
  Schedule s(15, 0, 10, t0);
  EXPECT_EQ(s.due(t0 + seconds(14)), Due::nothing);
  EXPECT_EQ(s.due(t0 + seconds(15)), Due::stall);
  EXPECT_EQ(s.helper_deadline(), seconds(5));
  EXPECT_EQ(Schedule(15, 0, 1, t0).helper_deadline(), seconds(2));
  EXPECT_EQ(Schedule(15, 0, 600, t0).helper_deadline(), seconds(30));
}

TEST(WatchSchedule, Messages) {
  EXPECT_EQ(stall_message(15, false),
            "no progress for 15 s (no output): asking every task for its stack");
  EXPECT_EQ(stall_message(15, true),
            "no progress for 15 s (no output, heartbeat unchanged): asking every task for its "
            "stack");
  EXPECT_EQ(stacks_path("", "42"), "ddp-watch-42.stacks");
  EXPECT_EQ(stacks_path("", ""), "ddp-watch-local.stacks");
  EXPECT_EQ(stacks_path("s.txt", "42"), "s.txt");
  EXPECT_EQ(new_steps({"1.0"}, {"1.0", "1.1"}), (std::vector<std::string>{"1.1"}));
}

// In a job array squeue names the step after the array (100_2.1); the processes carry the
// task's own SLURM_JOB_ID (101).
TEST(WatchSchedule, StepsFromSqueueUseTheJobsOwnId) {
  auto steps = parse_steps(
      "100_2.batch node01\n100_2.extern node[01-03]\n100_2.1 node[01-03]\n"
      "100_2.interactive node01\ngarbage\n100_2. node01\n100_2.x node01\n",
      "101");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].id, "101.1");
  EXPECT_EQ(steps[0].nodes, "node[01-03]");
  auto plain = parse_steps("12.0 node01\n12.3 node[02-03]\n", "12");
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_EQ(plain[1].id, "12.3");
  EXPECT_TRUE(parse_steps("", "12").empty());
}

// A progress bar's last redraw (no newline), then the dump: two lines.
TEST(WatchSchedule, ADumpGluedToABarStartsALineOfItsOwn) {
  auto lines =
      split_at_dump(Line{3, "train:  45%|####5     | 45/100\rFatal Python error: Aborted"});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].task, 3);
  EXPECT_EQ(lines[0].text, "train:  45%|####5     | 45/100\r");
  EXPECT_EQ(lines[1].task, 3);
  EXPECT_EQ(lines[1].text, "Fatal Python error: Aborted");
  EXPECT_EQ(split_at_dump(Line{1, "Fatal Python error: Aborted"}).size(), 1u);
  EXPECT_EQ(split_at_dump(Line{1, "step 5"}).size(), 1u);
  std::vector<Line> glued =
      split_at_dump(Line{0, " 10%|#         | 10/100 [00:10<01:30]Fatal Python error: Aborted"});
  glued.push_back(Line{0, ""});
  glued.push_back(Line{0, "Current thread 0x00007f (most recent call first):"});
  glued.push_back(Line{0, "  File \"/work/train.py\", line 8 in load_batch"});
  auto dumps = parse_dumps(glued);
  ASSERT_EQ(dumps.size(), 1u);
  ASSERT_EQ(dumps[0].threads.size(), 1u);
  EXPECT_EQ(dumps[0].threads[0].frames[0].function, "load_batch");
}

// While the stacks are taken the program's own lines still reach the job's output; the dumps
// and the helper's markers do not.
TEST(WatchSchedule, TheDumpFilterLetsTheProgramsOwnLinesThrough) {
  DumpFilter f;
  const std::vector<std::pair<Line, bool>> lines = {
      {{0, "step 41 loss 0.3"}, false},
      {{0, "ddp-watch-dump: pid 4242"}, true},
      {{0, "Fatal Python error: Aborted"}, true},
      {{1, "rank 1 saving a checkpoint"}, false},  // another task, interleaved
      {{0, ""}, true},
      {{0, "Current thread 0x00007f (most recent call first):"}, true},
      {{0, "  File \"/work/train.py\", line 8 in load_batch"}, true},
      {{0, "Extension modules: torch._C (total: 1)"}, true},
      {{0, "  indented, but after the dump"}, false},
      {{1, "Fatal Python error: Aborted"}, true},
      {{1, "checkpoint saved"}, false},  // ends task 1's dump
  };
  for (const auto& [line, dump] : lines) EXPECT_EQ(f.in_dump(line), dump) << line.text;
}
