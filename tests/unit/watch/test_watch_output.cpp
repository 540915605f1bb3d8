#include <gtest/gtest.h>

#include "ddp-watch/output.hpp"

using namespace ddp::watch;

TEST(WatchOutput, SplitsSrunLabels) {
  struct Case {
    const char* raw;
    int task;
    const char* text;
  };
  const Case cases[] = {
      {"3: step 5", 3, "step 5"},
      {" 12: x", 12, "x"},
      {"0: ", 0, ""},
      {"0:", 0, ""},
      {"1:   File \"a.py\", line 3 in f", 1, "  File \"a.py\", line 3 in f"},
      {"srun: error: node02: task 3: Killed", -1, "srun: error: node02: task 3: Killed"},
      {"epoch 3/5 loss 0.1", -1, "epoch 3/5 loss 0.1"},
      {"12345678: too long a label", -1, "12345678: too long a label"},
      {"", -1, ""},
  };
  for (const Case& c : cases) {
    Line l = split_label(c.raw);
    EXPECT_EQ(l.task, c.task) << c.raw;
    EXPECT_EQ(l.text, c.text) << c.raw;
  }
}

TEST(WatchOutput, ParsesTaskLists) {
  EXPECT_EQ(parse_task_list("3"), (std::vector<int>{3}));
  EXPECT_EQ(parse_task_list("0-2,5"), (std::vector<int>{0, 1, 2, 5}));
  for (const char* bad : {"", "a", "3-1", "1,", ",1", "1-", "-1", "2000000"}) {
    EXPECT_FALSE(parse_task_list(bad)) << bad;
  }
}

TEST(WatchOutput, FormatsRanges) {
  EXPECT_EQ(format_ranges({5, 0, 1, 2, 3}), "0-3,5");
  EXPECT_EQ(format_ranges({4}), "4");
  EXPECT_EQ(format_ranges({1, 1, 3}), "1,3");
  EXPECT_EQ(format_ranges({}), "");
}
