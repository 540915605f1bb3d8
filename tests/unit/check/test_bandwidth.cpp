// nccl-tests' all-reduce bandwidth arithmetic and the NCCL id's hex form.
#include <gtest/gtest.h>

#include "ddp-check/nccl/bandwidth.hpp"

namespace ddp::check {
namespace {

TEST(Bandwidth, MatchesNcclTestsFormula) {
  struct Case {
    std::uint64_t bytes;
    double seconds;
    std::uint32_t ranks;
    double algbw, busbw;
  };
  const Case cases[] = {
      {1'000'000'000, 1.0, 2, 1.0, 1.0},        // 2(n-1)/n = 1
      {1'000'000'000, 0.5, 8, 2.0, 3.5},        // 2*7/8 = 1.75
      {64ull << 20, 0.001, 1, 67.108864, 0.0},  // one rank moves nothing over the bus
      {100, 0.0, 4, 0.0, 0.0},                  // no time measured: no figure
  };
  for (const auto& c : cases) {
    auto bw = allreduce_bandwidth(c.bytes, c.seconds, c.ranks);
    EXPECT_NEAR(bw.algbw_gbps, c.algbw, 1e-9);
    EXPECT_NEAR(bw.busbw_gbps, c.busbw, 1e-9);
  }
}

TEST(Hex, RoundTripsAndRejectsGarbage) {
  std::vector<unsigned char> bytes = {0x00, 0x7f, 0x80, 0xff};
  EXPECT_EQ(to_hex(bytes), "007f80ff");
  EXPECT_EQ(from_hex("007F80ff"), bytes);
  EXPECT_FALSE(from_hex("abc"));
  EXPECT_FALSE(from_hex("zz"));
  EXPECT_EQ(from_hex(""), std::vector<unsigned char>{});
}

}  // namespace
}  // namespace ddp::check
