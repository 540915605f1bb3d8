// ddp-check's wire protocol: round trip, strict parsing, bounded lines.
#include <gtest/gtest.h>

#include <string>

#include "ddp-check/rendezvous/hello.hpp"

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
  h.job = "812";
  h.step = "3";
  h.cred = "MUNGE:AwQFAAC+signed:";
  h.port = 29500;
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
  EXPECT_EQ(back->job, "812");
  EXPECT_EQ(back->step, "3");
  EXPECT_EQ(back->het, "-");
  EXPECT_EQ(back->auth, AuthMode::munge);
  EXPECT_EQ(back->cred, "MUNGE:AwQFAAC+signed:");
}

TEST(Hello, TheCredentialSignsEverythingBeforeIt) {
  Hello h = sample();
  std::string line = format_hello(h);
  line.pop_back();
  EXPECT_EQ(signed_part(line), hello_body(h));
  EXPECT_EQ(line, hello_body(h) + " cred=MUNGE:AwQFAAC+signed:");
  EXPECT_TRUE(line.ends_with(" port=29500 auth=munge cred=MUNGE:AwQFAAC+signed:")) << line;
}

TEST(Hello, PeerTextIsPrintedPrintable) {
  auto verdict = parse_verdict("ddp-check/2 fail rank \x1b[2J gone\xc3\xa9");
  ASSERT_TRUE(verdict);
  EXPECT_EQ(verdict->text, "rank \\x1b[2J gone\\xc3\\xa9");
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
  h.host = "evil host\nddp-check/2 ok\x1b[2J";
  h.gpus = std::string(100000, 'x');
  std::string line = format_hello(h);
  EXPECT_LE(line.size(), k_max_line);
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  line.pop_back();
  auto back = parse_hello(line);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->host, "evil\\x20host\\x0addp-check/2\\x20ok\\x1b[2J");
  EXPECT_EQ(back->gpus, std::string(k_max_value - 3, 'x') + "...");
  EXPECT_EQ(wire_token(back->host), back->host);  // a parsed value is its own token
  EXPECT_EQ(wire_token(""), "-");
}

TEST(Hello, RejectsMalformedLines) {
  std::string good = format_hello(sample());
  good.pop_back();
  struct Case {
    std::string line;
    std::string message;
  };
  const Case cases[] = {
      {"", "not a ddp-check/2 hello"},
      {"GET / HTTP/1.0", "not a ddp-check/2 hello"},
      {"ddp-check/1 hello rank=1", "not a ddp-check/2 hello"},
      {"ddp-check/2 hello rank=1", "missing key \"world\""},
      {good.substr(0, good.find(" cred=")) + " color=red", "unknown key \"color\""},
      {good.substr(0, good.find(" cred=")) + " rank=3", "key \"rank\" given twice"},
      {good.substr(0, good.find(" cred=")) + " junk", "expected key=value"},
      {good + " rank=3", "\"rank=3\" after the credential"},
      {good.substr(0, good.find(" cred=")), "missing key \"cred\""},
      {"ddp-check/2 hello host=a\x1b[2Jb", "value of \"host\" is not printable ASCII"},
      {"ddp-check/2 hello host=caf\xc3\xa9", "value of \"host\" is not printable ASCII"},
      {"ddp-check/2 hello host=" + std::string(300, 'h'), "value of \"host\" too long"},
      {"ddp-check/2 hello auth=kerberos", "bad value \"kerberos\" for \"auth\""},
      {"ddp-check/2 hello rank=-1", "bad value \"-1\" for \"rank\""},
      {"ddp-check/2 hello rank=99999999999", "bad value"},
      {"ddp-check/2 hello nccl=2", "bad value \"2\" for \"nccl\""},
      // An empty text is written "-": "step=" would read back as another step (found by
      // fuzz.wire).
      {"ddp-check/2 hello step=", "bad value \"\" for \"step\""},
      {"ddp-check/2 hello host=", "bad value \"\" for \"host\""},
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
      {{Verdict::Kind::ok, ""}, "ddp-check/2 ok\n"},
      {{Verdict::Kind::fail, "missing RANK 3"}, "ddp-check/2 fail missing RANK 3\n"},
      {{Verdict::Kind::fail, "a\nb"}, "ddp-check/2 fail a\\x0ab\n"},
      {{Verdict::Kind::fail, "a\x1b[31mb\x9b"}, "ddp-check/2 fail a\\x1b[31mb\\x9b\n"},
      {{Verdict::Kind::nccl, "00ff"}, "ddp-check/2 nccl 00ff\n"},
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
  EXPECT_FALSE(parse_verdict("ddp-check/2 maybe"));
  EXPECT_FALSE(parse_verdict("ddp-check/1 ok"));
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
