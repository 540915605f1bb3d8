#include <gtest/gtest.h>

#include "ddp-watch/dump_plan.hpp"

using namespace ddp::watch;

// torchrun (pid 100) with workers of rank 3 and 2; a stray process of the step (pid 50).
TEST(WatchDumpPlan, LaunchersStopFirstAndDumpLast) {
  DumpPlan plan = plan_dump({{100, 1, 1, -1}, {102, 100, 1, 3}, {101, 100, 1, 2}, {50, 1, 1, -1}});
  ASSERT_EQ(plan.stop.size(), 1u);
  EXPECT_EQ(plan.stop[0].pid, 100);
  std::vector<pid_t> order;
  for (const StepProcess& p : plan.dump) order.push_back(p.pid);
  EXPECT_EQ(order, (std::vector<pid_t>{50, 101, 102, 100}));
  EXPECT_TRUE(plan_dump({}).dump.empty());
}

TEST(WatchDumpPlan, NoticesRoundTrip) {
  StepProcess p{4242, 7, 1, 3};
  std::string line = dump_notice(p);
  EXPECT_EQ(line, "ddp-watch-dump: task 1 rank 3 pid 4242");
  StepProcess back;
  ASSERT_TRUE(parse_dump_notice(line, back));
  EXPECT_EQ(back.task, 1);
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.pid, 4242);
  for (const char* other :
       {"ddp-watch-dump: task 1 rank 3", "ddp-watch-dump: task 1 rank 3 pid 4 x", "step 5", ""}) {
    EXPECT_FALSE(parse_dump_notice(other, back)) << other;
  }
}
