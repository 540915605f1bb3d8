// The option tables' parser (libddp/util/cli) on a small table of its own: every kind of value,
// the environment fallback, the end of the options, the usage layout and did-you-mean.
#include <gtest/gtest.h>

#include <map>

#include "libddp/util/cli.hpp"

namespace cli = ddp::cli;

namespace {

struct Opts {
  bool flag = false;
  std::uint64_t count = 0;
  bool count_all = false;
  double share = 0;
  long wait = 0;
  std::size_t color = 9;
  std::string name;
  std::string file;
  std::optional<std::string> maybe;
  bool maybe_bare = false;
  std::string internal;
};

constexpr std::string_view k_colors[] = {"red", "blue"};
constexpr std::string_view k_all[] = {"all"};

constexpr cli::Option<Opts> k_table[] = {
    {{.name = "--flag", .help = "a flag", .alias = "-f"},
     [](Opts& o, const cli::Value&) { o.flag = true; }},
    {{.name = "--count",
      .kind = cli::Kind::number,
      .arg = "N",
      .help = "a count\nover two lines",
      .env = "T_COUNT",
      .min = 1,
      .max = 9,
      .words = k_all},
     [](Opts& o, const cli::Value& v) {
       o.count = v.number;
       o.count_all = v.word;
     }},
    {{.name = "--share", .kind = cli::Kind::share, .arg = "X", .expect = "expected a share"},
     [](Opts& o, const cli::Value& v) { o.share = v.decimal; }},
    {{.name = "--wait", .kind = cli::Kind::duration, .arg = "DURATION"},
     [](Opts& o, const cli::Value& v) { o.wait = static_cast<long>(v.number); }},
    {{.name = "--color",
      .kind = cli::Kind::choice,
      .arg = "red|blue|and-a-long-tail",
      .help = "a color",
      .words = k_colors,
      .expect = "color"},
     [](Opts& o, const cli::Value& v) { o.color = v.number; }},
    {{.name = "--name", .kind = cli::Kind::text, .env = "T_NAME", .expect = "expected a name"},
     [](Opts& o, const cli::Value& v) { o.name = std::string(v.text); }},
    {{.name = "--file", .kind = cli::Kind::file},
     [](Opts& o, const cli::Value& v) { o.file = std::string(v.text); }},
    {{.name = "--maybe", .kind = cli::Kind::optional, .arg = "[FILE]"},
     [](Opts& o, const cli::Value& v) {
       o.maybe_bare = !v.given;
       if (v.given) o.maybe = std::string(v.text);
     }},
    {{.name = "--internal", .kind = cli::Kind::text, .shown = cli::Shown::nowhere},
     [](Opts& o, const cli::Value& v) { o.internal = std::string(v.text); }},
};

std::string unknown(std::string_view arg, std::string_view near) {
  return "unknown " + std::string(arg) + (near.empty() ? "" : " near " + std::string(near));
}
std::string missing(std::string_view name) {
  return std::string(name) + " needs a value";
}

constexpr cli::Style k_style{.prefix = "t: ",
                             .unknown = unknown,
                             .missing = missing,
                             .stop_at_operand = true,
                             .usage_width = 20};

struct Parsed {
  ddp::Result<std::size_t> first;
  Opts opts;
};

Parsed parse(std::vector<std::string_view> args, std::map<std::string, std::string> env = {}) {
  Parsed p{0, {}};
  const cli::EnvLookup lookup = [env](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  p.first = cli::parse(std::span<const cli::Option<Opts>>(k_table), k_style, args, lookup, p.opts);
  return p;
}

std::string error_of(std::vector<std::string_view> args,
                     std::map<std::string, std::string> env = {}) {
  auto p = parse(std::move(args), std::move(env));
  return p.first ? "" : p.first.error().message;
}

}  // namespace

TEST(Cli, EveryKindBothForms) {
  auto p = parse({"-f", "--count=3", "--share", "0.5", "--wait=1m30s", "--color", "blue",
                  "--name=x", "--file", "f", "--maybe", "m", "--internal=i", "cmd", "--flag"});
  ASSERT_TRUE(p.first) << p.first.error().message;
  EXPECT_EQ(*p.first, 13u);  // the command starts at the first word that is no option
  EXPECT_TRUE(p.opts.flag);
  EXPECT_EQ(p.opts.count, 3u);
  EXPECT_EQ(p.opts.share, 0.5);
  EXPECT_EQ(p.opts.wait, 90);
  EXPECT_EQ(p.opts.color, 1u);
  EXPECT_EQ(p.opts.name, "x");
  EXPECT_EQ(p.opts.file, "f");
  EXPECT_EQ(p.opts.maybe, "m");
  EXPECT_EQ(p.opts.internal, "i");
  EXPECT_TRUE(parse({"--count", "all"}).opts.count_all);
  auto bare = parse({"--maybe", "--flag", "--", "cmd"});
  ASSERT_TRUE(bare.first);
  EXPECT_EQ(*bare.first, 3u);
  EXPECT_TRUE(bare.opts.maybe_bare);
  EXPECT_FALSE(bare.opts.maybe);
  EXPECT_TRUE(bare.opts.flag);
}

TEST(Cli, EnvironmentFirstThenTheCommandLine) {
  EXPECT_EQ(parse({}, {{"T_COUNT", "4"}}).opts.count, 4u);
  EXPECT_EQ(parse({"--count=5"}, {{"T_COUNT", "4"}}).opts.count, 5u);
  EXPECT_EQ(error_of({}, {{"T_COUNT", "x"}}),
            "t: T_COUNT \"x\": expected a whole number from 1 to 9 (or all)");
  // An empty variable is unset for text, an error for the other kinds.
  EXPECT_EQ(parse({}, {{"T_NAME", ""}}).opts.name, "");
  EXPECT_NE(error_of({}, {{"T_COUNT", ""}}), "");
}

TEST(Cli, MessagesNameTheOptionAndValue) {
  EXPECT_EQ(error_of({"--count", "10"}),
            "t: --count \"10\": expected a whole number from 1 to 9 (or all)");
  EXPECT_EQ(error_of({"--share=1"}), "t: --share \"1\": expected a share");
  EXPECT_EQ(error_of({"--color", "green"}),
            "t: --color \"green\": unknown color (valid: red, blue)");
  EXPECT_EQ(error_of({"--name="}), "t: --name: expected a name");
  EXPECT_EQ(error_of({"--file", "--"}), "t: --file needs a file name");
  EXPECT_EQ(error_of({"--flag=1"}), "t: --flag takes no value");
  EXPECT_EQ(error_of({"--count"}), "t: --count needs a value");
  EXPECT_NE(error_of({"--wait", "5q"}).find("expected a duration"), std::string::npos);
  EXPECT_EQ(error_of({"--cuont=3"}), "t: unknown --cuont=3 near --count");
  // An internal option is parsed but never suggested.
  EXPECT_EQ(error_of({"--internl"}), "t: unknown --internl");
}

TEST(Cli, UsageLinesAndNames) {
  const auto specs = cli::specs(std::span<const cli::Option<Opts>>(k_table));
  EXPECT_EQ(cli::usage(specs, k_style),
            "  --flag              a flag\n"
            "  --count N           a count\n"
            "                      over two lines\n"
            "  --share X\n"
            "  --wait DURATION\n"
            "  --color red|blue|and-a-long-tail  a color\n"
            "  --name\n"
            "  --file\n"
            "  --maybe [FILE]\n");
  const auto names = cli::names(specs);
  EXPECT_EQ(names.size(), 8u);
  EXPECT_EQ(std::count(names.begin(), names.end(), "--internal"), 0);
}
