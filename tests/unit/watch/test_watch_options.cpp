#include <gtest/gtest.h>

#include "options.hpp"

using namespace ddp::watch;

TEST(WatchOptions, ParsesDurations) {
  struct Case {
    const char* text;
    long seconds;
  };
  const Case good[] = {{"90", 90},   {"90s", 90},     {"5m", 300},
                       {"1h", 3600}, {"1h30m", 5400}, {"1d", 86400}};
  for (const Case& c : good)
    EXPECT_EQ(parse_duration(c.text, "--timeout").value(), c.seconds) << c.text;
  for (const char* bad : {"", "0", "0s", "-5", "5x", "m", "1h30", "5 m"}) {
    auto r = parse_duration(bad, "--timeout");
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("--timeout="), std::string::npos) << r.error().message;
  }
}

TEST(WatchOptions, ParsesACommandLine) {
  auto o = parse_options({"--timeout", "5m", "--grace=10s", "--stacks", "s.txt", "--heartbeat=hb",
                          "--", "srun", "-l", "python3", "train.py"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->timeout_s, 300);
  EXPECT_EQ(o->grace_s, 10);
  EXPECT_EQ(o->stacks, "s.txt");
  EXPECT_EQ(o->heartbeat, "hb");
  EXPECT_EQ(o->command, (std::vector<std::string>{"srun", "-l", "python3", "train.py"}));
  // Without "--" the command starts at the first word that is not an option.
  auto bare = parse_options({"--timeout=1m", "srun", "--ddp", "python3"});
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->command.front(), "srun");
  EXPECT_EQ(bare->grace_s, 20);
}

TEST(WatchOptions, RejectsWithTheCulprit) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"srun", "x"}, "--timeout is required"},
      {{"--timeout", "5m"}, "no command to watch"},
      {{"--timeout"}, "--timeout needs a value"},
      {{"--timeout", "5q", "srun"}, "--timeout=\"5q\""},
      {{"--timeot", "5m", "srun"}, "unknown option \"--timeot\""},
      {{"--stacks=", "--timeout=1m", "srun"}, "--stacks needs a file name"},
  };
  for (const Case& c : cases) {
    auto r = parse_options(c.args);
    ASSERT_FALSE(r) << c.message;
    EXPECT_NE(r.error().message.find(c.message), std::string::npos) << r.error().message;
  }
}

TEST(WatchOptions, RecognisesTorchrun) {
  EXPECT_TRUE(launches_torchrun({"srun", "--ddp=torchrun", "torchrun", "train.py"}));
  EXPECT_TRUE(launches_torchrun({"srun", "/usr/bin/torchrun", "train.py"}));
  EXPECT_TRUE(launches_torchrun({"srun", "python3", "-m", "torch.distributed.run", "t.py"}));
  EXPECT_FALSE(launches_torchrun({"srun", "--ddp", "python3", "train.py"}));
  EXPECT_FALSE(launches_torchrun({"srun", "--ddp=torchrun", "python3", "t.py"}));
}

TEST(WatchOptions, RecognisesSrun) {
  EXPECT_TRUE(is_srun({"srun", "python3"}));
  EXPECT_TRUE(is_srun({"/usr/bin/srun"}));
  EXPECT_FALSE(is_srun({"torchrun", "t.py"}));
  EXPECT_FALSE(is_srun({"mysrun"}));
  EXPECT_FALSE(is_srun({}));
}
