// What ddpgen status and logs --rank read for sweeps and per-rank logs: an array's records from
// scontrol, each task's values from the script, the rank logs' directory from the output.
#include <gtest/gtest.h>

#include "gen/core/job_status.hpp"
#include "gen/core/model.hpp"

namespace ddpgen {
namespace {

TEST(SweepStatus, ListsEveryTaskOfAnArray) {
  // Two tasks ran (the second still runs), two wait behind the throttle in one record.
  const std::string text =
      "JobId=14 ArrayJobId=12 ArrayTaskId=2-3%2 ArrayTaskThrottle=2 JobName=sweep "
      "JobState=PENDING Reason=JobArrayTaskLimit NodeList=\n"
      "JobId=12 ArrayJobId=12 ArrayTaskId=0 JobName=sweep JobState=COMPLETED Reason=None "
      "NodeList=node01\n"
      "JobId=13 ArrayJobId=12 ArrayTaskId=1 JobName=sweep JobState=RUNNING Reason=None "
      "NodeList=node02\n"
      "JobId=15 JobName=other JobState=RUNNING\n";
  const auto records = parse_array_records(text);
  ASSERT_EQ(records.size(), 3U);
  EXPECT_EQ(records[0].tasks, std::vector<long>{0});
  EXPECT_EQ(records[0].status.id, "12_0");
  EXPECT_EQ(records[0].status.state, "COMPLETED");
  EXPECT_EQ(records[1].tasks, std::vector<long>{1});
  EXPECT_EQ(records[1].status.nodes, "node02");
  EXPECT_EQ(records[2].tasks, (std::vector<long>{2, 3}));
  EXPECT_EQ(records[2].status.reason, "JobArrayTaskLimit");
  EXPECT_TRUE(parse_array_records("JobId=15 JobName=other JobState=RUNNING\n").empty());
  EXPECT_EQ(parse_array_records("JobId=9 ArrayJobId=9 ArrayTaskId=1,4-5 JobState=PENDING\n")
                .front()
                .tasks,
            (std::vector<long>{1, 4, 5}));
}

TEST(SweepStatus, ReadsEachTasksValuesFromTheScript) {
  const std::string script =
      "#!/bin/bash\n# sweep task 0: lr=0.1 batch=32\n# sweep task 1: lr=0.1 batch=64\n"
      "# sweep task x: nothing\n  0) export SWEEP_LR='0.1' ;;\n";
  const auto values = sweep_values_in_script(script);
  ASSERT_EQ(values.size(), 2U);
  EXPECT_EQ(values.at(0), "lr=0.1 batch=32");
  EXPECT_EQ(values.at(1), "lr=0.1 batch=64");
}

TEST(SweepStatus, FindsTheRankLogsDirectoryInTheOutput) {
  EXPECT_EQ(rank_log_dir_in("step 1\nddpgen: rank logs in /runs/logs/12\nstep 2\n"),
            "/runs/logs/12");
  // A requeued run writes the line again: the last one counts.
  EXPECT_EQ(rank_log_dir_in("ddpgen: rank logs in /a\nddpgen: rank logs in /b\n"), "/b");
  EXPECT_FALSE(rank_log_dir_in("ddpgen: rank logs in \nno line\n"));
}

TEST(SweepStatus, CombinationsRunTheLastParameterFastest) {
  Sweep s;
  s.parameters = {{"lr", {"0.1", "0.01"}}, {"batch", {"32", "64", "128"}}};
  ASSERT_EQ(s.size(), 6);
  EXPECT_EQ(s.values(0), (std::vector<std::string>{"0.1", "32"}));
  EXPECT_EQ(s.values(2), (std::vector<std::string>{"0.1", "128"}));
  EXPECT_EQ(s.values(3), (std::vector<std::string>{"0.01", "32"}));
  EXPECT_EQ(s.values(5), (std::vector<std::string>{"0.01", "128"}));
}

}  // namespace
}  // namespace ddpgen
