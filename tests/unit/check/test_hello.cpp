// ddp-check's wire protocol: round trip, strict parsing, bounded lines.
#include <gtest/gtest.h>

#include <string>

#include "hello.hpp"

namespace ddp::check {
namespace {

Hello sample() {
  Hello h;
  h.rank = 5;
  h.world_size = 16;
  h.local_rank = 1;
  h.local_world_size = 8;
  h.node_rank = 0;
  h.nnodes = 2;
  h.pid = 4242;
  h.host = "gpu-a01";
  h.gpus = "0,1";
  h.ifname = "ib0";
  h.if_kind = "infiniband";
  h.address = "10.1.0.7";
  h.nccl_ready = true;
  return h;
}

TEST(Hello, RoundTrips) {
  Hello h = sample();
  std::string line = format_hello(h);
  ASSERT_EQ(line.back(), '\n');
  line.pop_back();
  auto back = parse_hello(line);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->rank, 5u);
  EXPECT_EQ(back->world_size, 16u);
  EXPECT_EQ(back->local_rank, 1u);
  EXPECT_EQ(back->local_world_size, 8u);
  EXPECT_EQ(back->node_rank, 0u);
  EXPECT_EQ(back->nnodes, 2u);
  EXPECT_EQ(back->pid, 4242u);
  EXPECT_EQ(back->host, "gpu-a01");
  EXPECT_EQ(back->gpus, "0,1");
  EXPECT_EQ(back->ifname, "ib0");
  EXPECT_EQ(back->address, "10.1.0.7");
  EXPECT_TRUE(back->nccl_ready);
}

TEST(Hello, UnsetNodeFieldsRoundTripAsDash) {
  Hello h = sample();
  h.node_rank.reset();
  h.nnodes.reset();
  std::string line = format_hello(h);
  EXPECT_NE(line.find("node_rank=- nnodes=-"), std::string::npos) << line;
  line.pop_back();
  auto back = parse_hello(line);
  ASSERT_TRUE(back);
  EXPECT_FALSE(back->node_rank);
  EXPECT_FALSE(back->nnodes);
}

TEST(Hello, HostileValuesBecomeOneBoundedToken) {
  Hello h = sample();
  h.host = "evil host\nddp-check/1 ok";
  h.gpus = std::string(100000, 'x');
  std::string line = format_hello(h);
  EXPECT_LE(line.size(), k_max_line);
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  line.pop_back();
  auto back = parse_hello(line);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->host, "evil_host_ddp-check/1_ok");
}

TEST(Hello, RejectsMalformedLines) {
  std::string good = format_hello(sample());
  good.pop_back();
  struct Case {
    std::string line;
    std::string message;
  };
  const Case cases[] = {
      {"", "not a ddp-check/1 hello"},
      {"GET / HTTP/1.0", "not a ddp-check/1 hello"},
      {"ddp-check/2 hello rank=1", "not a ddp-check/1 hello"},
      {"ddp-check/1 hello rank=1", "missing key \"world\""},
      {good + " color=red", "unknown key \"color\""},
      {good + " rank=3", "key \"rank\" given twice"},
      {good + " junk", "expected key=value"},
      {"ddp-check/1 hello rank=-1", "bad value \"-1\" for \"rank\""},
      {"ddp-check/1 hello rank=99999999999", "bad value"},
      {"ddp-check/1 hello nccl=2", "bad value \"2\" for \"nccl\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.line);
    auto parsed = parse_hello(c.line);
    ASSERT_FALSE(parsed);
    EXPECT_NE(parsed.error().message.find(c.message), std::string::npos) << parsed.error().message;
  }
}

TEST(Verdict, RoundTripsAndFlattens) {
  struct Case {
    Verdict verdict;
    std::string line;
  };
  const Case cases[] = {
      {{Verdict::Kind::ok, ""}, "ddp-check/1 ok\n"},
      {{Verdict::Kind::fail, "missing RANK 3"}, "ddp-check/1 fail missing RANK 3\n"},
      {{Verdict::Kind::fail, "a\nb"}, "ddp-check/1 fail a b\n"},
      {{Verdict::Kind::nccl, "00ff"}, "ddp-check/1 nccl 00ff\n"},
  };
  for (const auto& c : cases) {
    std::string line = format_verdict(c.verdict);
    EXPECT_EQ(line, c.line);
    line.pop_back();
    auto back = parse_verdict(line);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->kind, c.verdict.kind);
  }
  EXPECT_LE(format_verdict({Verdict::Kind::fail, std::string(10000, 'y')}).size(), k_max_line);
  EXPECT_FALSE(parse_verdict("ddp-check/1 maybe"));
  EXPECT_FALSE(parse_verdict("HTTP/1.1 200 OK"));
}

TEST(LineBuffer, SplitsLinesAndRefusesEndlessOnes) {
  LineBuffer buf;
  EXPECT_TRUE(buf.feed("one\r\ntw"));
  EXPECT_EQ(buf.next_line(), "one");
  EXPECT_EQ(buf.next_line(), std::nullopt);
  EXPECT_TRUE(buf.feed("o\n"));
  EXPECT_EQ(buf.next_line(), "two");

  LineBuffer endless;
  EXPECT_TRUE(endless.feed(std::string(k_max_line, 'x')));
  EXPECT_FALSE(endless.feed("x"));
  EXPECT_TRUE(endless.overflowed());
  EXPECT_EQ(endless.next_line(), std::nullopt);

  LineBuffer long_line;
  EXPECT_TRUE(long_line.feed(std::string(k_max_line, 'x') + "\nnext\n"));
  EXPECT_EQ(long_line.next_line(), std::nullopt);
  EXPECT_TRUE(long_line.overflowed());
}

}  // namespace
}  // namespace ddp::check
