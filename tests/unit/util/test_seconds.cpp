// ddp::parse_seconds: the durations ddp-watch's options and ddpgen's watchdog key accept.
#include <gtest/gtest.h>

#include "libddp/util/seconds.hpp"

TEST(Seconds, ParsesWhatPeopleWrite) {
  struct Case {
    const char* text;
    long seconds;
  };
  const Case good[] = {{"90", 90},      {"90s", 90},   {"5m", 300},    {"1h", 3600},
                       {"1h30m", 5400}, {"1d", 86400}, {"2m30s", 150}, {"30m1h", 5400}};
  for (const Case& c : good) {
    auto r = ddp::parse_seconds(c.text, "--timeout");
    ASSERT_TRUE(r) << c.text << ": " << r.error().message;
    EXPECT_EQ(*r, c.seconds) << c.text;
  }
}

TEST(Seconds, RejectsNamingTheValue) {
  for (const char* bad : {"", "0", "0s", "-5", "5x", "m", "1h30", "5 m", "367d", "99999999999"}) {
    auto r = ddp::parse_seconds(bad, "watchdog.timeout");
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().message, std::string("watchdog.timeout \"") + bad +
                                     "\": expected a duration such as 90, 90s, 5m, 1h or 1h30m");
  }
}
