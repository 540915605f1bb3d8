// MASTER_PORT: range parsing, the derived port's guarantees, and the override precedence.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "libddp/core/port.hpp"

namespace ddp {
namespace {

struct RangeCase {
  std::string_view text;
  bool ok;
  PortRange range;
  std::string_view message;
};

TEST(PortRange, ParsesLowDashHigh) {
  const RangeCase cases[] = {
      {"20000-30999", true, {20000, 30999}, ""},
      {"1024-1024", true, {1024, 1024}, ""},
      {"1024-65535", true, {1024, 65535}, ""},
      {"1023-2000", false, {}, "need 1024 <= LOW <= HIGH <= 65535"},
      {"3000-2000", false, {}, "bad port range \"3000-2000\""},
      {"2000-65536", false, {}, "expected LOW-HIGH"},
      {"2000", false, {}, "expected LOW-HIGH"},
      {"2000-", false, {}, "expected LOW-HIGH"},
      {"-2000", false, {}, "expected LOW-HIGH"},
      {" 2000-3000", false, {}, "expected LOW-HIGH"},
      {"2000-3000x", false, {}, "expected LOW-HIGH"},
      {"+2000-3000", false, {}, "expected LOW-HIGH"},
      {"", false, {}, "expected LOW-HIGH"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto range = parse_port_range(c.text);
    ASSERT_EQ(range.has_value(), c.ok);
    if (c.ok) {
      EXPECT_EQ(range->first, c.range.first);
      EXPECT_EQ(range->last, c.range.last);
    } else {
      EXPECT_NE(range.error().message.find(c.message), std::string::npos) << range.error().message;
    }
  }
}

TEST(PortRange, ParsesTheKernelsEphemeralRange) {
  const RangeCase cases[] = {
      {"32768\t60999\n", true, {32768, 60999}, ""},
      {"32768 60999", true, {32768, 60999}, ""},
      {"  1024   65535  \n", true, {1024, 65535}, ""},
      {"32768", false, {}, "bad ip_local_port_range \"32768\""},
      {"32768\t60999\t5", false, {}, "expected \"LOW HIGH\""},
      {"60999\t32768\n", false, {}, "expected \"LOW HIGH\""},
      {"a b", false, {}, "expected \"LOW HIGH\""},
      {"", false, {}, "expected \"LOW HIGH\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto range = parse_ephemeral_range(c.text);
    ASSERT_EQ(range.has_value(), c.ok);
    if (c.ok) {
      EXPECT_EQ(range->first, c.range.first);
      EXPECT_EQ(range->last, c.range.last);
    } else {
      EXPECT_NE(range.error().message.find(c.message), std::string::npos) << range.error().message;
    }
  }
}

TEST(PortRange, Overlaps) {
  const PortRange ephemeral{32768, 60999};
  EXPECT_FALSE((PortRange{20000, 30999}).overlaps(ephemeral));
  EXPECT_TRUE((PortRange{30000, 32768}).overlaps(ephemeral));
  EXPECT_TRUE((PortRange{60999, 61000}).overlaps(ephemeral));
  EXPECT_FALSE((PortRange{61000, 62000}).overlaps(ephemeral));
}

TEST(DerivePort, StaysInsideTheWindow) {
  const PortRange windows[] = {{20000, 30999}, {1024, 1024}, {1024, 65535}, {40000, 40007}};
  for (const PortRange& w : windows) {
    for (std::uint32_t job = 0; job < 20000; job += 7) {
      for (std::uint32_t step : {0u, 1u, 99u, 0xfffffffau, 0xfffffffbu, 0xffffffffu}) {
        const auto port = derive_port(job, step, w);
        ASSERT_TRUE(w.contains(port)) << job << "." << step << " -> " << port;
      }
    }
  }
}

TEST(DerivePort, IsDeterministic) {
  const PortRange w{20000, 30999};
  EXPECT_EQ(derive_port(123456, 3, w), derive_port(123456, 3, w));
  EXPECT_NE(derive_port(123456, 0, w), derive_port(123457, 0, w));
}

TEST(DerivePort, SpreadsConsecutiveJobs) {
  // 10,000 consecutive job ids over 11,000 ports: a uniform hash fills about 1 - e^(-10/11),
  // i.e. ~60% of the ports, and no 100-port bucket gets much more than its share (~91).
  const PortRange w{20000, 30999};
  std::set<std::uint16_t> ports;
  std::vector<int> buckets(w.size() / 100 + 1);
  for (std::uint32_t job = 1'000'000; job < 1'010'000; ++job) {
    const auto port = derive_port(job, 0, w);
    ports.insert(port);
    ++buckets[(port - w.first) / 100];
  }
  EXPECT_GT(ports.size(), 5800u);
  EXPECT_LT(*std::max_element(buckets.begin(), buckets.end()), 150);
  EXPECT_GT(*std::min_element(buckets.begin(), buckets.end() - 1), 40);
}

TEST(DerivePort, ConcurrentStepsOfAJobAreDistinct) {
  const PortRange windows[] = {{20000, 30999}, {20000, 20999}, {50000, 50800}};
  for (const PortRange& w : windows) {
    for (std::uint32_t job : {1u, 4242u, 0xffffffffu}) {
      std::set<std::uint16_t> ports;
      for (std::uint32_t step = 0; step < 100; ++step) ports.insert(derive_port(job, step, w));
      EXPECT_EQ(ports.size(), 100u) << "job " << job << " window " << w.first;
    }
  }
}

TEST(FirstReservedPort, TakesTheFirst) {
  struct Case {
    std::string_view text;
    int port;  // -1: error
  };
  const Case cases[] = {
      {"12000-12003", 12000},
      {"12000,12002", 12000},
      {"12000", 12000},
      {"12000-12001,13000", 12000},
      {"1", 1},
      {"", -1},
      {"0", -1},
      {"70000", -1},
      {"12000-", -1},
      {"12000,,1", -1},
      {"a", -1},
      {"12000 ", -1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto port = first_reserved_port(c.text);
    if (c.port < 0) {
      ASSERT_FALSE(port);
      EXPECT_NE(port.error().message.find("bad reserved port list"), std::string::npos);
    } else {
      ASSERT_TRUE(port) << port.error().message;
      EXPECT_EQ(*port, c.port);
    }
  }
}

struct ChoiceCase {
  std::optional<std::string_view> user;
  std::optional<std::string_view> reserved;
  bool ok;
  std::uint16_t port;  // 0: the derived port
  PortSource source;
  std::string_view message;
};

TEST(ChoosePort, UserThenReservedThenDerived) {
  const PortRange w{20000, 30999};
  const auto derived = derive_port(55, 2, w);
  const ChoiceCase cases[] = {
      {std::nullopt, std::nullopt, true, 0, PortSource::derived, ""},
      {"", "", true, 0, PortSource::derived, ""},
      {"29500", std::nullopt, true, 29500, PortSource::user, ""},
      {"29500", "12000-12003", true, 29500, PortSource::user, ""},
      {std::nullopt, "12000-12003", true, 12000, PortSource::reserved, ""},
      {"", "12002,12005", true, 12002, PortSource::reserved, ""},
      {"abc", std::nullopt, false, 0, PortSource::user, "DDP_MASTER_PORT=\"abc\": not a port"},
      {"0", std::nullopt, false, 0, PortSource::user, "DDP_MASTER_PORT=\"0\""},
      {"65536", std::nullopt, false, 0, PortSource::user, "DDP_MASTER_PORT=\"65536\""},
      {"-5", std::nullopt, false, 0, PortSource::user, "expected an integer from 1 to 65535"},
      {std::nullopt, "x", false, 0, PortSource::reserved,
       "SLURM_STEP_RESV_PORTS: bad reserved port list \"x\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.user.value_or("<unset>")) + " / " +
                 std::string(c.reserved.value_or("<unset>")));
    auto choice = choose_port(PortInputs{c.user, c.reserved, 55, 2}, w);
    ASSERT_EQ(choice.has_value(), c.ok);
    if (!c.ok) {
      EXPECT_NE(choice.error().message.find(c.message), std::string::npos)
          << choice.error().message;
      continue;
    }
    EXPECT_EQ(choice->port, c.port == 0 ? derived : c.port);
    EXPECT_EQ(choice->source, c.source);
  }
}

}  // namespace
}  // namespace ddp
