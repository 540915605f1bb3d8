// The site environment file: accepted lines, literal values, and errors with path:line.
#include <gtest/gtest.h>

#include <string>

#include "libddp/core/envfile.hpp"

namespace ddp {
namespace {

TEST(EnvFile, ParsesLinesLiterally) {
  struct Case {
    std::string_view name;
    std::string_view contents;
    EnvList expected;
  };
  const Case cases[] = {
      {"empty", "", {}},
      {"comments and blanks", "# NCCL settings\n\n   \n  # indented comment\n", {}},
      {"plain", "NCCL_DEBUG=INFO\n", {{"NCCL_DEBUG", "INFO"}}},
      {"no final newline", "A=1\nB=2", {{"A", "1"}, {"B", "2"}}},
      {"export prefix",
       "export FI_PROVIDER=efa\nexport\tX=1\n",
       {{"FI_PROVIDER", "efa"}, {"X", "1"}}},
      {"indented", "  A=1\n", {{"A", "1"}}},
      {"empty value", "NCCL_IB_HCA=\n", {{"NCCL_IB_HCA", ""}}},
      {"value with = and spaces", "OPTS=a=b c \n", {{"OPTS", "a=b c "}}},
      {"quotes kept", "A=\"x y\"\nB='z'\n", {{"A", "\"x y\""}, {"B", "'z'"}}},
      {"no expansion", "P=$HOME/x\n", {{"P", "$HOME/x"}}},
      {"hash inside value", "A=x#y\n", {{"A", "x#y"}}},
      {"CRLF", "A=1\r\nB=2\r\n", {{"A", "1"}, {"B", "2"}}},
      {"underscore names", "_A1=x\nexport_x=2\n", {{"_A1", "x"}, {"export_x", "2"}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto env = parse_env_file(c.contents, "/etc/ddp.env");
    ASSERT_TRUE(env) << env.error().message;
    EXPECT_EQ(*env, c.expected);
  }
}

TEST(EnvFile, ErrorsNamePathAndLine) {
  struct Case {
    std::string_view contents;
    std::string_view message;
  };
  const Case cases[] = {
      {"A=1\nnonsense\n", "/etc/ddp.env:2: expected KEY=VALUE, got \"nonsense\""},
      {"1A=x\n", "/etc/ddp.env:1: bad variable name \"1A\" (expected [A-Za-z_][A-Za-z0-9_]*)"},
      {"# c\n\nA B=x\n", "/etc/ddp.env:3: bad variable name \"A B\""},
      {"A =x\n", "/etc/ddp.env:1: bad variable name \"A \""},
      {"=x\n", "/etc/ddp.env:1: bad variable name \"\""},
      {"export\n", "/etc/ddp.env:1: expected KEY=VALUE, got \"export\""},
      {"A-B=1\n", "bad variable name \"A-B\""},
      {"A=1\nB=2\nA=3\n", "/etc/ddp.env:3: A is set twice in this file"},
      {std::string_view("A=x\0y\n", 6), "/etc/ddp.env:1: NUL byte in line"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.contents);
    auto env = parse_env_file(c.contents, "/etc/ddp.env");
    ASSERT_FALSE(env);
    EXPECT_NE(env.error().message.find(c.message), std::string::npos) << env.error().message;
  }
}

}  // namespace
}  // namespace ddp
