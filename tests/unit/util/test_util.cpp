// ddp_util: the helpers and rules every program shares.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "libddp/util/result.hpp"
#include "libddp/util/rules.hpp"
#include "libddp/util/shell.hpp"
#include "libddp/util/text.hpp"

namespace ddp {
namespace {

TEST(Util, ErrorToStringWithAndWithoutLocation) {
  EXPECT_EQ((Error{"bad", {}}).to_string(), "bad");
  EXPECT_EQ((Error{"bad", {"--set nodes=x", 0, 0}}).to_string(), "--set nodes=x: bad");
  EXPECT_EQ((Error{"bad", {"job.yaml", 3, 7}}).to_string(), "job.yaml:3:7: bad");
  // A hostile value or file name inside the message cannot reach the terminal raw.
  EXPECT_EQ((Error{"got \"\x1b[2J\nx\x7f\"", {"a\tb.yaml", 1, 1}}).to_string(),
            "a\\x09b.yaml:1:1: got \"\\x1b[2J\\x0ax\\x7f\"");
  Result<int> r = fail({"f.yaml", 1, 2}, "why");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "why");
  EXPECT_EQ(r.error().where.line, 1);
}

TEST(Util, ParseUnsignedBoundsAndJunk) {
  EXPECT_EQ(text::parse_unsigned("7", 1, 10, "--n").value(), 7u);
  EXPECT_EQ(text::parse_unsigned("1", 1, 10, "--n").value(), 1u);
  EXPECT_EQ(text::parse_unsigned("10", 1, 10, "--n").value(), 10u);
  for (const char* bad :
       {"0", "11", "", "-1", "+3", " 3", "3 ", "3x", "0x10", "1e3", "99999999999999999999999"}) {
    auto r = text::parse_unsigned(bad, 1, 10, "--n");
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().message,
              "--n " + text::quote(bad) + ": expected a whole number from 1 to 10");
  }
}

TEST(Util, ParsePositiveDecimals) {
  EXPECT_EQ(text::parse_positive("0.25"), 0.25);
  EXPECT_EQ(text::parse_positive(".5"), 0.5);
  EXPECT_EQ(text::parse_positive("60"), 60.0);
  EXPECT_EQ(text::parse_positive("1e-3"), 0.001);
  for (const char* bad : {"", "0", "0.0", "-0.5", "+0.5", " 0.5", "0.5 ", "0.5x", "inf", "nan",
                          "1e999", "0x1p-2", "e5"})
    EXPECT_FALSE(text::parse_positive(bad)) << bad;
  EXPECT_EQ(text::parse_share("0.999"), 0.999);
  EXPECT_EQ(text::parse_share(".25"), 0.25);
  for (const char* bad : {"1", "1.0", "1.5", "0", "-0.5", "0.5x"})
    EXPECT_FALSE(text::parse_share(bad)) << bad;
}

TEST(Util, ParseIntSignedBoundsAndJunk) {
  EXPECT_EQ(text::parse_int("0"), 0);
  EXPECT_EQ(text::parse_int("42"), 42);
  EXPECT_EQ(text::parse_int("-9"), -9);
  EXPECT_EQ(text::parse_int("2147483647"), 2147483647);
  EXPECT_EQ(text::parse_int("-2147483648"), -2147483647 - 1);
  for (const char* bad : {"", "-", "--1", "+3", " 3", "3 ", "3x", "2147483648", "-2147483649",
                          "self", "99999999999999999999999"}) {
    EXPECT_FALSE(text::parse_int(bad)) << bad;
  }
}

TEST(Util, DidYouMeanOneThreshold) {
  const std::vector<std::string> keys = {"nodes", "partition", "port_range", "omp_num_threads"};
  EXPECT_EQ(text::did_you_mean("nodez", keys), "nodes");
  EXPECT_EQ(text::did_you_mean("port_rang", keys), "port_range");
  EXPECT_EQ(text::did_you_mean("omp_num_thread", keys), "omp_num_threads");
  EXPECT_EQ(text::did_you_mean("partitoin", keys), "partition");  // 2 edits
  EXPECT_EQ(text::did_you_mean("xyz", keys), "");
  EXPECT_EQ(text::did_you_mean("gpus", keys), "");
}

TEST(Util, QuoteEscapesAndCuts) {
  EXPECT_EQ(text::quote("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(text::quote("a\\b"), "\"a\\\\b\"");
  EXPECT_EQ(text::quote(std::string("x\ny")), "\"x\\x0ay\"");
  EXPECT_EQ(text::quote("caf\xc3\xa9"), "\"caf\\xc3\\xa9\"");
  EXPECT_EQ(text::quote("abcdef", 3), "\"abc...\"");
  EXPECT_EQ(text::quote("abc", 3), "\"abc\"");
}

// One convention for every untrusted byte shown: printable ASCII kept, the rest \xNN; a cut
// never splits an escape.
TEST(Util, PrintableEscapesEveryOtherByte) {
  EXPECT_EQ(text::printable("node\x1b]0;owned\x07\xc3\xa9 \\ok"),
            "node\\x1b]0;owned\\x07\\xc3\\xa9 \\ok");
  EXPECT_EQ(text::printable(std::string("\0\x7f\xff", 3)), "\\x00\\x7f\\xff");
  EXPECT_EQ(text::printable(std::string(600, 'a'), 10), "aaaaaaaaaa...");
  EXPECT_EQ(text::printable("ab\ncd", 4), "ab...");
  EXPECT_EQ(text::printable("ab\ncd", 6), "ab\\x0a...");
  EXPECT_EQ(text::printable("a b", text::k_whole, " "), "a\\x20b");
  ddp::Error e{"bad \x1b[2J value", {"caf\xc3\xa9.yaml", 3, 1}};
  EXPECT_EQ(e.to_string(), "caf\\xc3\\xa9.yaml:3:1: bad \\x1b[2J value");
}

TEST(Util, PluralNoun) {
  EXPECT_EQ(text::plural(1, "node"), "1 node");
  EXPECT_EQ(text::plural(0, "node"), "0 nodes");
  EXPECT_EQ(text::plural(2, "child", "children"), "2 children");
  EXPECT_EQ(text::noun(1, "says", "say"), "says");
  EXPECT_EQ(text::noun(3, "says", "say"), "say");
}

TEST(Util, ShellQuote) {
  EXPECT_EQ(ddp::shell::quote("train.py"), "train.py");
  EXPECT_EQ(ddp::shell::quote(""), "''");
  EXPECT_EQ(ddp::shell::quote("a b"), "'a b'");
  EXPECT_EQ(ddp::shell::quote("it's"), "'it'\\''s'");
  EXPECT_EQ(ddp::shell::quote("$HOME;rm -rf /"), "'$HOME;rm -rf /'");
  EXPECT_EQ(ddp::shell::quote("a\nb"), "'a\nb'");
}

TEST(Util, EnvName) {
  EXPECT_TRUE(ddp::is_env_name("NCCL_SOCKET_IFNAME"));
  EXPECT_TRUE(ddp::is_env_name("_x1"));
  EXPECT_FALSE(ddp::is_env_name(""));
  EXPECT_FALSE(ddp::is_env_name("1X"));
  EXPECT_FALSE(ddp::is_env_name("A-B"));
  EXPECT_FALSE(ddp::is_env_name("A B"));
}

TEST(Util, SplitJoinTrim) {
  EXPECT_EQ(text::split("a,,b", ','), (std::vector<std::string_view>{"a", "", "b"}));
  EXPECT_EQ(text::split("", ','), (std::vector<std::string_view>{""}));
  EXPECT_EQ(text::join(std::vector<std::string>{"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(text::join(std::set<std::string>{"b", "a"}, ","), "a,b");
  EXPECT_EQ(text::join(std::vector<std::string_view>{}, ","), "");
  EXPECT_EQ(text::trim(" \t x y \r\n"), "x y");
}

TEST(Util, Decimal) {
  EXPECT_EQ(text::decimal(0), "0");
  EXPECT_EQ(text::decimal(18446744073709551615u), "18446744073709551615");
}

TEST(Util, PortRangeIsStrict) {
  auto ok = parse_port_range("20000-30999");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->first, k_default_port_range.first);
  EXPECT_EQ(ok->last, k_default_port_range.last);
  for (const char* bad : {"20000x-30999", "20000-30999x", " 20000-30999", "20000", "-30999",
                          "30999-20000", "80-90", "20000-70000", "a-b"}) {
    EXPECT_FALSE(parse_port_range(bad)) << bad;
  }
  // Written as it is read.
  EXPECT_EQ(format_port_range(*ok), "20000-30999");
  EXPECT_EQ(parse_port_range(format_port_range({1024, 65535}))->last, 65535);
}

TEST(Util, TorchrunRefusalNamesTheFix) {
  EXPECT_EQ(torchrun_refusal(4, "2 nodes"),
            "--ddp=torchrun starts one torchrun launcher per node, but this step has 4 tasks on "
            "2 nodes; use --ntasks-per-node=1 (torchrun starts the workers)");
}

// One way to write ranks in every report: runs of three or more as ranges, pairs listed.
TEST(Util, FormatRanges) {
  EXPECT_EQ(text::format_ranges({5, 0, 1, 2, 3, 8, 7}), "0-3,5,7,8");
  EXPECT_EQ(text::format_ranges({4, 4, 4}), "4");
  EXPECT_EQ(text::format_ranges({}), "");
  EXPECT_EQ(text::format_ranges({1, 3, 4, 5, 6, 9}), "1,3-6,9");
}

}  // namespace
}  // namespace ddp
