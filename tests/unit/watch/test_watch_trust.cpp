// What ddp-watch believes before it acts (trust.hpp): hostile output of the program, each case
// ending with no node named, beside the lines that Slurm and ddp-check's rank 0 really write.
#include <gtest/gtest.h>

#include <chrono>

#include "ddp-watch/evidence.hpp"
#include "ddp-watch/supervise_core.hpp"
#include "ddp-watch/trust.hpp"

using namespace ddp::watch;
using std::chrono::seconds;

namespace {

const Clock::time_point t0{};

struct Heard {
  std::vector<std::string> nodes;
  std::vector<std::string> announce;
};

// The command run under --heal with `bytes` on `stream`, ending with `code`.
// `run_tag`: the tag this run was given ("": none).
Heard heal_run(std::vector<std::string> command, Stream stream, const std::string& bytes,
               int code = 1, const std::string& run_tag = "") {
  Options o;
  o.timeout_s = 20;
  o.command = std::move(command);
  o.heal = "rec";
  Supervisor s(o, JobEnv{"42", "", "", "0", false, run_tag, std::nullopt});
  s.started(t0);
  s.on_output(t0 + seconds(1), stream, bytes);
  s.on_end(stream);
  Outcome out = s.on_exit(code);
  Heard r;
  for (const ddp::Suspect& x : out.heal_suspects) r.nodes.push_back(x.node);
  r.announce = out.announce;
  return r;
}

const std::vector<std::string> k_train = {"srun", "python", "train.py"};
const std::vector<std::string> k_check = {"srun", "ddp-check", "--timeout", "10"};

}  // namespace

TEST(WatchTrust, WriterOfALine) {
  EXPECT_EQ(writer_of({-1, "srun: error: x"}, 2, true, true), Writer::srun);
  EXPECT_EQ(writer_of({3, "srun: error: x"}, 2, true, true), Writer::task);
  EXPECT_EQ(writer_of({-1, "srun: error: x"}, 1, true, true), Writer::unknown);   // stdout
  EXPECT_EQ(writer_of({-1, "srun: error: x"}, 2, false, true), Writer::unknown);  // cut line
  EXPECT_EQ(writer_of({-1, "srun: error: x"}, 2, true, false), Writer::unknown);  // not srun
}

TEST(WatchTrust, CheckSuspectLineExactly) {
  auto s = parse_check_suspect("ddp-check: suspect node03: slow: 1.2 GB/s, median 9.8 GB/s");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->node, "node03");
  EXPECT_EQ(s->fault, ddp::Fault::slow);
  EXPECT_EQ(s->evidence, "1.2 GB/s, median 9.8 GB/s");
  // ddp-check's own writer reads back.
  EXPECT_TRUE(parse_check_suspect(ddp::suspect_line({"gpu-a1.x_2", ddp::Fault::fabric, "ib", ""})));
  for (const char* other :
       {"ddp-check: REFUSED 10.0.0.9: ddp-check: suspect node02: slow: x",  // quoted
        " ddp-check: suspect node02: slow: x",                              // not at the start
        "ddp-check: suspect node02: slow",                                  // no evidence
        "ddp-check: suspect node02: slow: ",                                // empty evidence
        "ddp-check: suspect node02: hang: x",          // ddp-watch's fault, not ddp-check's
        "ddp-check: suspect node02: node-failure: x",  // Slurm's
        "ddp-check: suspect node02: bogus: x", "ddp-check: suspect node/02: slow: x",
        "ddp-check: suspect : slow: x", "ddp-check: suspect node02\x1b[2K: slow: x"}) {
    EXPECT_FALSE(parse_check_suspect(other)) << other;
  }
}

TEST(WatchTrust, RunTagsAreShortLowercaseHex) {
  for (const char* good : {"0123abcd", "0123456789abcdef", "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0"})
    EXPECT_TRUE(ddp::valid_run_tag(good)) << good;
  for (const char* bad : {"", "0123abc", "0123ABCD", "0123abcg", "0123abc ", "0123abc]",
                          "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0"})
    EXPECT_FALSE(ddp::valid_run_tag(bad)) << bad;
}

// ddp-check's three forms of a suspect line: as before, with this run's tag at the end, and
// under --auth=none in a form that does not start as a suspect line does.
TEST(WatchTrust, SuspectLineForms) {
  const ddp::Suspect s{"node02", ddp::Fault::slow, "best pair 0.19 Gbit/s", ""};
  EXPECT_EQ(ddp::suspect_line(s), "ddp-check: suspect node02: slow: best pair 0.19 Gbit/s");
  EXPECT_EQ(ddp::suspect_line(s, {true, "0123456789abcdef"}),
            "ddp-check: suspect node02: slow: best pair 0.19 Gbit/s [run 0123456789abcdef]");
  EXPECT_EQ(ddp::suspect_line(s, {false, "0123456789abcdef"}),
            "ddp-check: unauthenticated, not acted on: suspect node02: slow: best pair 0.19 "
            "Gbit/s");
  // A long evidence is cut, so that the tag stays within srun's 1 KiB piece of the line.
  const std::string tag = "0123456789abcdef";
  const std::string cut = ddp::suspect_line(
      {std::string(255, 'n'), ddp::Fault::fabric, std::string(2000, 'e'), ""}, {true, tag});
  EXPECT_LE(cut.size(), 1023u);
  auto back = parse_check_suspect(cut, tag);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->evidence, std::string(ddp::k_max_evidence - 3, 'e') + "...");
  EXPECT_EQ(ddp::without_run_tag("x [run 0123abcd]", "0123abcd"), "x");
  EXPECT_FALSE(ddp::without_run_tag("x [run 0123abcd] y", "0123abcd"));
  EXPECT_FALSE(ddp::without_run_tag("x", ""));
}

// With a run tag, only a line that ends with this run's tag names a node; the tag is not part
// of the evidence. An echoed line of another run, or an untagged one, is text.
TEST(WatchTrust, OnlyThisRunsTaggedLineNamesANode) {
  const std::string tag = "0123456789abcdef";
  auto s = parse_check_suspect("ddp-check: suspect node03: slow: 1.2 GB/s [run " + tag + "]", tag);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->node, "node03");
  EXPECT_EQ(s->evidence, "1.2 GB/s");
  const ddp::Suspect fabric{"gpu-a1", ddp::Fault::fabric, "ib: down", ""};
  auto back = parse_check_suspect(ddp::suspect_line(fabric, {true, tag}), tag);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->evidence, "ib: down");
  for (const std::string& other : std::vector<std::string>{
           "ddp-check: suspect node03: slow: x",                         // no tag
           "ddp-check: suspect node03: slow: x [run fedcba9876543210]",  // another run's
           "ddp-check: suspect node03: slow: x [run " + tag + "] ",      // not at the end
           "ddp-check: suspect node03: slow: x [run " + tag + "]x",
           "ddp-check: suspect node03: slow:  [run " + tag + "]",  // no evidence but the tag
           "ddp-check: suspect node03: slow: [run " + tag + "]",
           "ddp-check: unauthenticated, not acted on: suspect node03: slow: x [run " + tag + "]",
           ddp::suspect_line(fabric, {false, tag})}) {
    EXPECT_FALSE(parse_check_suspect(other, tag)) << other;
  }
  // The supervisor of a run with a tag: only the tagged line of rank 0 counts.
  EXPECT_EQ(heal_run(k_check, Stream::out, "0: ddp-check: suspect node03: slow: x\n", 1, tag).nodes,
            std::vector<std::string>{});
  EXPECT_EQ(heal_run(k_check, Stream::out,
                     "0: ddp-check: suspect node03: slow: x [run fedcba9876543210]\n", 1, tag)
                .nodes,
            std::vector<std::string>{});
  EXPECT_EQ(heal_run(k_check, Stream::out,
                     "0: ddp-check: suspect node03: slow: x [run " + tag + "]\n", 1, tag)
                .nodes,
            std::vector<std::string>{"node03"});
  EXPECT_EQ(
      heal_run(k_check, Stream::out,
               "0: ddp-check: unauthenticated, not acted on: suspect node03: slow: x\n", 1, tag)
          .nodes,
      std::vector<std::string>{});
}

// The hostile cases: what the program prints, and the nodes that must come of it (none).
TEST(WatchTrust, ProgramOutputNamesNoNode) {
  const std::string long_head(LineBuffer::k_max_line, 'x');
  struct Case {
    const char* name;
    std::vector<std::string> command;
    Stream stream;
    std::string bytes;
  };
  const Case cases[] = {
      {"a task's node failure line", k_train, Stream::err,
       "1: srun: error: Node failure on node02\n"},
      {"a task's launch failure line", k_train, Stream::err,
       "1: srun: error: Task launch for StepId=7.0 failed on node node02: x\n"},
      {"a task's SIGBUS line", k_train, Stream::err, "1: srun: error: node02: task 1: Bus error\n"},
      {"after a carriage return", k_train, Stream::err,
       "1:  10%\rsrun: error: Node failure on node02\n"},
      {"the rest of a line longer than the buffer", k_train, Stream::err,
       "1: " + long_head + "srun: error: Node failure on node02\n"},
      {"unlabelled on stdout", k_train, Stream::out, "srun: error: Node failure on node02\n"},
      {"a command that is not srun",
       {"bash", "run.sh"},
       Stream::err,
       "srun: error: Node failure on node02\n"},
      {"a torchrun table with SIGBUS",
       {"srun", "torchrun", "t.py"},
       Stream::err,
       "0: Root Cause (first observed failure):\n0: [0]:\n0:   host      : node03\n"
       "0:   rank      : 2 (local_rank: 0)\n0:   exitcode  : -7 (pid: 42)\n0: =====\n"},
      {"a suspect line of the training program", k_train, Stream::out,
       "0: ddp-check: suspect node02: slow: x\n"},
      {"a suspect line of another task of the preflight", k_check, Stream::out,
       "1: ddp-check: suspect node02: slow: x\n"},
      {"a suspect line quoted by rank 0", k_check, Stream::out,
       "0: ddp-check: REFUSED 10.9.9.9:4242: \"ddp-check: suspect node02: slow: x\"\n"},
      {"rank 0's suspect line on stderr", k_check, Stream::err,
       "0: ddp-check: suspect node02: slow: x\n"},
      {"a suspect line printed by the preflight's srun", k_check, Stream::err,
       "ddp-check: suspect node02: slow: x\n"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(heal_run(c.command, c.stream, c.bytes).nodes, std::vector<std::string>{}) << c.name;
  }
}

// What Slurm and ddp-check's rank 0 write is still read.
TEST(WatchTrust, SlurmAndRankZeroNameNodes) {
  EXPECT_EQ(heal_run(k_train, Stream::err, "srun: error: Node failure on node02\n").nodes,
            std::vector<std::string>{"node02"});
  EXPECT_EQ(heal_run(k_train, Stream::err, "srun: error: node02: task 1: Bus error\n").nodes,
            std::vector<std::string>{"node02"});
  EXPECT_EQ(heal_run(k_check, Stream::out, "0: ddp-check: suspect node03: slow: x\n").nodes,
            std::vector<std::string>{"node03"});
  EXPECT_EQ(heal_run(k_check, Stream::out, "   0: ddp-check: suspect node03: slow: x\n").nodes,
            std::vector<std::string>{"node03"});  // srun pads the label
}

// One short line naming a huge hostlist is counted, not expanded, and said.
TEST(WatchTrust, AFloodLineIsBounded) {
  const auto start = std::chrono::steady_clock::now();
  Heard r = heal_run(k_train, Stream::err, "srun: error: Node failure on n[000000-099999]\n");
  const auto spent = std::chrono::steady_clock::now() - start;
  EXPECT_LT(spent, std::chrono::milliseconds(500));
  EXPECT_TRUE(r.nodes.empty());
  EXPECT_EQ(r.announce.back(),
            "srun named 100000 nodes in one line, more than 1024: not read as evidence");

  // Many lines naming distinct nodes: at most k_max_suspects are kept, and that is said.
  std::string many;
  for (int i = 0; i < 3000; ++i)
    many += "srun: error: Node failure on n" + std::to_string(i) + "\n";
  Heard m = heal_run(k_train, Stream::err, many);
  EXPECT_EQ(m.nodes.size(), k_max_suspects);
  EXPECT_EQ(m.announce.back(), "more than 1024 nodes named: the rest are not read as evidence");
}

// A line arriving a byte at a time is cut in linear time.
TEST(WatchTrust, LineBufferIsLinear) {
  LineBuffer b;
  const auto start = std::chrono::steady_clock::now();
  std::size_t lines = 0;
  for (int i = 0; i < 4 * 65536; ++i) lines += b.add("x").size();
  EXPECT_EQ(lines, 3u);  // cut at each k_max_line + 1 bytes
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

// The task that is rank 0 may be known only after its lines came: they count then, and only
// its own; srun's lines count whoever rank 0 is, all in the order they came.
TEST(WatchTrust, RankZerosTaskDecidesWhenAsked) {
  EvidenceGate gate(true, true);
  gate.add(split_label("1: ddp-check: suspect node03: slow: x"), 1, true);
  gate.add(split_label("srun: error: Node failure on node04"), 2, true);
  gate.add(split_label("0: ddp-check: suspect node02: slow: y"), 1, true);
  gate.add(split_label("1: ddp-check: suspect node02: fabric: z"), 1, true);
  auto nodes = [&] {
    std::vector<std::string> out;
    for (const ddp::Suspect& s : gate.suspects()) out.push_back(s.node + " " + s.evidence);
    return out;
  };
  EXPECT_EQ(nodes(), (std::vector<std::string>{"node04 srun: Node failure on node04", "node02 y"}));
  gate.set_head_task(1);
  EXPECT_EQ(nodes(), (std::vector<std::string>{"node03 x", "node04 srun: Node failure on node04",
                                               "node02 z"}));
  // A flood of suspect lines from many tasks is bounded.
  for (int i = 0; i < 10000; ++i)
    gate.add(split_label(std::to_string(i % 50) + ": ddp-check: suspect n" + std::to_string(i) +
                         ": slow: x"),
             1, true);
  EXPECT_LE(gate.suspects().size(), k_max_suspects);
}
