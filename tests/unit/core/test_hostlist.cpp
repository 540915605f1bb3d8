// Hostlist and tasks-per-node parsing, checked against what Slurm writes and what it rejects.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "libddp/core/hostlist.hpp"

namespace ddp {
namespace {

using Names = std::vector<std::string>;

struct ExpandCase {
  std::string_view text;
  Names names;
};

TEST(Hostlist, ExpandsWhatSlurmWrites) {
  const ExpandCase cases[] = {
      {"node1", {"node1"}},
      {"node[001-004,7]", {"node001", "node002", "node003", "node004", "node7"}},
      {"node[8-10]", {"node8", "node9", "node10"}},
      {"node[08-10]", {"node08", "node09", "node10"}},
      {"node[0-1]", {"node0", "node1"}},
      {"node[00-01]", {"node00", "node01"}},
      {"node[098-101]", {"node098", "node099", "node100", "node101"}},
      {"rack[1-2]-node[01-03]",
       {"rack1-node01", "rack1-node02", "rack1-node03", "rack2-node01", "rack2-node02",
        "rack2-node03"}},
      {"gpu-a[1-2]x[3-4]", {"gpu-a1x3", "gpu-a1x4", "gpu-a2x3", "gpu-a2x4"}},
      {"a1,b[2-3],c-4.d", {"a1", "b2", "b3", "c-4.d"}},
      {"n[1-2].cluster.example", {"n1.cluster.example", "n2.cluster.example"}},
      {"[1-3]", {"1", "2", "3"}},
      {"n[5],n[5]", {"n5", "n5"}},
      {"n[3,1,2]", {"n3", "n1", "n2"}},
      {"x[1-2]y", {"x1y", "x2y"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto list = Hostlist::parse(c.text);
    ASSERT_TRUE(list) << list.error().message;
    EXPECT_EQ(list->size(), c.names.size());
    EXPECT_EQ(list->expand(), c.names);
    for (std::size_t i = 0; i < c.names.size(); ++i) EXPECT_EQ(list->at(i), c.names[i]);
    auto count = Hostlist::count(c.text);
    ASSERT_TRUE(count);
    EXPECT_EQ(*count, c.names.size());
  }
}

struct ErrorCase {
  std::string_view text;
  std::string_view message;  // a substring of the error
};

TEST(Hostlist, RejectsGarbageWithAMessage) {
  const ErrorCase cases[] = {
      {"", "bad hostlist \"\": the list is empty"},
      {"a,,b", "bad hostlist \"a,,b\": empty name (at offset 2)"},
      {",a", "empty name (at offset 0)"},
      {"a,", "empty name (at offset 2)"},
      {"node[1-3", "'[' is never closed (at offset 4)"},
      {"node[1-3,", "'[' is never closed"},
      {"node[", "'[' is never closed"},
      {"node1-3]", "']' without '['"},
      {"node[]", "empty '[]' (at offset 4)"},
      {"node[5-3]", "reversed range 5-3 (at offset 5)"},
      {"node[a-b]", "expected a number in brackets"},
      {"node[1-b]", "expected a number after '-'"},
      {"node[1x]", "unexpected character in brackets"},
      {"node[1-2[3]]", "nested '['"},
      {"node[[1]]", "nested '['"},
      {"node[1,]", "expected a number in brackets"},
      {"node[-1]", "expected a number in brackets"},
      {"node 1", "unexpected character (at offset 4)"},
      {"node\n1", "bad hostlist \"node\\x0a1\": unexpected character"},
      {"node[1234567890123456789]", "number too large"},
      {"node[0-99999999]", "too many names"},
      {"a[0-4095]b[0-4095]c[0-1]", "too many names"},
      {"a[0-4095]b[0-4095],c[0-4095]b[0-4095]", "too many names"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto list = Hostlist::parse(c.text);
    ASSERT_FALSE(list);
    EXPECT_NE(list.error().message.find(c.message), std::string::npos) << list.error().message;
    // The two entry points share one scanner, hence one verdict and one message.
    auto count = Hostlist::count(c.text);
    ASSERT_FALSE(count);
    EXPECT_EQ(count.error().message, list.error().message);
  }
}

TEST(Hostlist, QuotesLongListsShortened) {
  std::string text = "node[00001-10000]";
  for (int i = 0; i < 100; ++i) text += ",n" + std::to_string(i);
  text += ",,";
  auto list = Hostlist::parse(text);
  ASSERT_FALSE(list);
  EXPECT_LT(list.error().message.size(), 200u);
  EXPECT_NE(list.error().message.find("...\""), std::string::npos);
}

TEST(Hostlist, IndexesLargeRangesWithoutExpanding) {
  auto list = Hostlist::parse("node[00001-10000],gpu[1-4]x[001-512]");
  ASSERT_TRUE(list);
  EXPECT_EQ(list->size(), 10000u + 4 * 512);
  EXPECT_EQ(list->at(0), "node00001");
  EXPECT_EQ(list->at(9999), "node10000");
  EXPECT_EQ(list->at(10000), "gpu1x001");
  EXPECT_EQ(list->at(10000 + 511), "gpu1x512");
  EXPECT_EQ(list->at(10000 + 512), "gpu2x001");
  EXPECT_EQ(list->at(10000 + 4 * 512 - 1), "gpu4x512");
}

TEST(Hostlist, AcceptsTheLargestAllowedList) {
  auto count = Hostlist::count("a[0-4095]b[0-4095]");  // 2^24 names, the cap
  ASSERT_TRUE(count);
  EXPECT_EQ(*count, std::size_t{1} << 24);
}

// Random text over the hostlist alphabet: the three entry points must agree, never crash, and
// indexing must match expansion. Deterministic seed, so a failure reproduces.
TEST(Hostlist, RandomTextIsHandledConsistently) {
  std::mt19937 random(20240611);
  constexpr std::string_view k_alphabet = "n01209[[]]--,,.x \n";
  std::uniform_int_distribution<std::size_t> pick(0, k_alphabet.size() - 1);
  std::uniform_int_distribution<std::size_t> length(0, 24);
  int valid = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    for (std::size_t i = length(random); i > 0; --i) text += k_alphabet[pick(random)];
    SCOPED_TRACE(text);
    auto list = Hostlist::parse(text);
    auto count = Hostlist::count(text);
    ASSERT_EQ(list.has_value(), count.has_value());
    if (!list) {
      ASSERT_EQ(count.error().message, list.error().message);
      continue;
    }
    ++valid;
    ASSERT_EQ(*count, list->size());
    ASSERT_GT(list->size(), 0u);
    if (list->size() > 5000) continue;
    auto names = list->expand();
    ASSERT_EQ(names.size(), list->size());
    for (std::size_t i = 0; i < names.size(); ++i) ASSERT_EQ(list->at(i), names[i]);
  }
  EXPECT_GT(valid, 1000);  // the alphabet must exercise the success path too
}

// Long comma lists take a block-at-a-time shortcut in count() but not in parse(): with defects
// planted anywhere (block edges included) both must still agree.
TEST(Hostlist, LongListsAgreeAcrossEntryPoints) {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> name_length(1, 20);
  std::uniform_int_distribution<int> letter(0, 35);
  const std::string_view defects[] = {",", "[1-2]", " ", "]", "[", "\x7f", "\xc3\xa9", "[0-1]x"};
  std::uniform_int_distribution<std::size_t> pick_defect(0, std::size(defects) - 1);
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    const int names = 1 + round % 60;
    for (int i = 0; i < names; ++i) {
      if (i > 0) text += ',';
      for (int j = name_length(random); j > 0; --j) {
        const int c = letter(random);
        text += static_cast<char>(c < 26 ? 'a' + c : '0' + (c - 26));
      }
    }
    if (round % 3 != 0) {
      std::uniform_int_distribution<std::size_t> where(0, text.size());
      text.insert(where(random), defects[pick_defect(random)]);
    }
    SCOPED_TRACE(text);
    auto list = Hostlist::parse(text);
    auto count = Hostlist::count(text);
    ASSERT_EQ(count.has_value(), list.has_value());
    if (!list) {
      ASSERT_EQ(count.error().message, list.error().message);
      continue;
    }
    ASSERT_EQ(*count, list->size());
  }
}

struct TasksCase {
  std::string_view text;
  std::vector<unsigned> counts;
};

TEST(TasksPerNode, ExpandsRepeats) {
  const TasksCase cases[] = {
      {"1", {1}},
      {"2(x3),1", {2, 2, 2, 1}},
      {"8(x2)", {8, 8}},
      {"4,2(x1),3(x2)", {4, 2, 3, 3}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto counts = parse_tasks_per_node(c.text);
    ASSERT_TRUE(counts) << counts.error().message;
    EXPECT_EQ(*counts, c.counts);
  }
}

TEST(TasksPerNode, RejectsGarbage) {
  const ErrorCase cases[] = {
      {"", "bad tasks-per-node list \"\": the list is empty"},
      {"0", "a node with 0 tasks"},
      {"2(x0)", "a repeat of 0"},
      {"2(x3", "expected \"(xN)\""},
      {"2(3)", "expected \"(xN)\""},
      {"2(x)", "expected \"(xN)\""},
      {"2,,1", "expected a task count"},
      {"2,", "expected a task count"},
      {"x", "expected a task count"},
      {"2 ", "unexpected character"},
      {"2(x3)1", "unexpected character"},
      {"99999999999", "task count too large"},
      {"1(x99999999999)", "too many nodes"},
      {"1(x16777216),1", "too many nodes"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto counts = parse_tasks_per_node(c.text);
    ASSERT_FALSE(counts);
    EXPECT_NE(counts.error().message.find(c.message), std::string::npos) << counts.error().message;
    auto summary = summarize_tasks_per_node(c.text, 0);
    ASSERT_FALSE(summary);
    EXPECT_EQ(summary.error().message, counts.error().message);
  }
}

struct SummaryCase {
  std::string_view text;
  std::size_t node_id;
  TasksPerNodeSummary expected;
};

TEST(TasksPerNode, SummarizesWithoutExpanding) {
  const SummaryCase cases[] = {
      {"2(x3),1", 0, {4, 7, 2, 0, 2, 0}}, {"2(x3),1", 3, {4, 7, 1, 0, 2, 6}},
      {"2(x3),1", 4, {4, 7, 0, 0, 2, 7}}, {"2(x3),1", 2, {4, 7, 2, 0, 2, 4}},
      {"1(x3),4", 1, {4, 7, 1, 3, 4, 1}}, {"1,4,2(x2)", 3, {4, 9, 2, 1, 4, 7}},
      {"1(x5)", 2, {5, 5, 1, 5, 1, 2}},   {"8(x10000)", 9999, {10000, 80000, 8, 0, 8, 79992}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto s = summarize_tasks_per_node(c.text, c.node_id);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(s->nodes, c.expected.nodes);
    EXPECT_EQ(s->tasks, c.expected.tasks);
    EXPECT_EQ(s->on_node, c.expected.on_node);
    EXPECT_EQ(s->first_crowded, c.expected.first_crowded);
    EXPECT_EQ(s->most, c.expected.most);
    EXPECT_EQ(s->before, c.expected.before);
  }
}

}  // namespace
}  // namespace ddp

namespace ddp {
namespace {

struct FormatCase {
  Names names;
  std::string_view text;
};

// What `scontrol show hostlist` writes for the same names (Slurm 22.05), and the cases where
// our messages need a rule of their own: names without a number, natural order, odd widths.
const FormatCase k_format_cases[] = {
    {{}, ""},
    {{"node01"}, "node01"},
    {{"node03", "node01", "node02", "node07"}, "node[01-03,07]"},
    {{"node01", "node02"}, "node[01-02]"},
    {{"node01", "node01", "node02"}, "node[01-02]"},
    {{"node10", "node9", "node2"}, "node[2,9-10]"},
    {{"node99", "node100", "node101"}, "node[99-101]"},
    {{"node09", "node10", "node11"}, "node[09-11]"},
    {{"node009", "node010", "node100", "node256"}, "node[009-010,100,256]"},
    {{"node1", "node01"}, "node1,node01"},
    {{"login", "node02", "node01", "gpu-a1"}, "gpu-a1,login,node[01-02]"},
    {{"rack10-n1", "rack2-n1", "rack2-n2"}, "rack2-n[1-2],rack10-n1"},
    {{"n1x2", "n1x3", "n2x2"}, "n1x[2-3],n2x2"},
    {{"node", "node1", "node2"}, "node,node[1-2]"},
    {{"a0", "a1", "a00"}, "a[0-1],a00"},
    {{"an unknown node", "node02", "node01"}, "an unknown node,node[01-02]"},
    {{"node1234567890123456789", "node1"}, "node1,node1234567890123456789"},
};

TEST(FormatHostlist, WritesSlurmsCompressedNotation) {
  for (const auto& c : k_format_cases) {
    EXPECT_EQ(format_hostlist(c.names), c.text) << testing::PrintToString(c.names);
  }
}

TEST(FormatHostlist, TwoHundredFiftySixNodesAreOneShortWord) {
  Names names;
  for (int i = 256; i >= 1; --i)
    names.push_back("node" + std::string(i < 10 ? "00" : i < 100 ? "0" : "") + std::to_string(i));
  EXPECT_EQ(format_hostlist(names), "node[001-256]");
  names.erase(names.begin() + 100);  // node156
  EXPECT_EQ(format_hostlist(names), "node[001-155,157-256]");
}

// Whatever the names, Slurm's parser reads the text back as the same set of names.
TEST(FormatHostlist, ParsesBackToTheSameNames) {
  std::mt19937 random(23);
  const std::vector<std::string> prefixes = {"node", "gpu", "n1x", "login", "a"};
  for (int round = 0; round < 2000; ++round) {
    Names names;
    int count = static_cast<int>(random() % 12) + 1;
    for (int i = 0; i < count; ++i) {
      std::string name = prefixes[random() % prefixes.size()];
      if (random() % 5 != 0) {
        std::string number = std::to_string(random() % 120);
        if (random() % 2 == 0 && number.size() < 3) number.insert(0, 3 - number.size(), '0');
        name += number;
      }
      names.push_back(name);
    }
    std::string text = format_hostlist(names);
    auto parsed = Hostlist::parse(text);
    ASSERT_TRUE(parsed) << text << ": " << parsed.error().message;
    Names back = parsed->expand();
    std::sort(back.begin(), back.end());
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    EXPECT_EQ(back, names) << text;
  }
}

}  // namespace
}  // namespace ddp
