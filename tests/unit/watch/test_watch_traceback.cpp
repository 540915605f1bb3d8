#include <gtest/gtest.h>

#include "ddp-watch/traceback.hpp"
#include "fixtures.hpp"

using namespace ddp::watch;

TEST(WatchTraceback, ParsesInterleavedDumps) {
  auto dumps = parse_dumps(fixtures::lines(fixtures::k_stall));
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_EQ(dumps[0].task, 2);
  EXPECT_EQ(dumps[0].reason, "Aborted");
  ASSERT_EQ(dumps[0].threads.size(), 1u);
  EXPECT_TRUE(dumps[0].threads[0].current);
  ASSERT_EQ(dumps[0].threads[0].frames.size(), 2u);
  EXPECT_EQ(dumps[0].threads[0].frames[0].function, "all_reduce");
  EXPECT_EQ(dumps[0].threads[0].frames[0].line, 1541);
  EXPECT_EQ(dumps[0].threads[0].frames[1].file, "/work/train.py");
  EXPECT_EQ(dumps[1].task, 4);
  ASSERT_EQ(dumps[1].threads.size(), 2u);
  EXPECT_FALSE(dumps[1].threads[0].current);
  // The dump's text is kept whole for the stacks file, extension modules included.
  EXPECT_EQ(dumps[1].text.front(), "Fatal Python error: Aborted");
  EXPECT_EQ(dumps[1].text.back(), "Extension modules: torch._C (total: 1)");
}

TEST(WatchTraceback, TheMainThreadRunsTheModule) {
  auto dumps = parse_dumps(fixtures::lines(fixtures::k_stall));
  const Thread* main = main_thread(dumps[1]);
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(main->frames.front().function, "load_batch");
}

TEST(WatchTraceback, OddLinesDoNotBreakIt) {
  auto dumps =
      parse_dumps(fixtures::lines("0: Fatal Python error: Segmentation fault\n"
                                  "0: \n"
                                  "0: Stack (most recent call first):\n"
                                  "0:   Garbage-collecting\n"
                                  "0:   File \"we\"ird.py\", line 7 in f\n"
                                  "0:   File \"x.py\", line notanumber in g\n"
                                  "0:   <no Python frame>\n"
                                  "0: something else entirely\n"
                                  "0:   File \"after.py\", line 1 in h\n"
                                  "1:   File \"orphan.py\", line 1 in h\n"));
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(dumps[0].reason, "Segmentation fault");
  ASSERT_EQ(dumps[0].threads.size(), 1u);
  ASSERT_EQ(dumps[0].threads[0].frames.size(), 1u);
  EXPECT_EQ(dumps[0].threads[0].frames[0].file, "we\"ird.py");
  EXPECT_EQ(main_thread(dumps[0]), &dumps[0].threads[0]);
}

TEST(WatchTraceback, NoDumpNoThread) {
  EXPECT_TRUE(parse_dumps(fixtures::lines("0: step 1\nsrun: error: x\n")).empty());
  EXPECT_EQ(main_thread(Dump{}), nullptr);
}
