// What the supervisor forwards of the step's output and the stack helper's: labels removed or
// kept, a command that is not srun left alone, the dumps held back after the stack request,
// lines cut from the bytes as they arrive.
#include <gtest/gtest.h>

#include "ddp-watch/dump_plan.hpp"
#include "ddp-watch/supervise_core.hpp"

using namespace ddp::watch;
using std::chrono::seconds;

namespace {

const Clock::time_point t0{};

Options options(std::vector<std::string> command) {
  Options o;
  o.timeout_s = 20;
  o.command = std::move(command);
  return o;
}

std::string texts(const std::vector<Write>& writes) {
  std::string out;
  for (const Write& w : writes) out += std::to_string(w.fd) + ">" + w.text;
  return out;
}

}  // namespace

TEST(WatchStepOutput, Forwarding) {
  struct Case {
    const char* name;
    std::vector<std::string> command;
    bool keep_labels, labelio;
    Stream stream;
    std::string bytes;
    std::string written;
  };
  const std::vector<std::string> srun = {"srun", "python", "t.py"};
  const Case cases[] = {
      {"labels removed", srun, false, false, Stream::out, "  3: loss 0.5\n", "1>loss 0.5\n"},
      {"kept when asked", srun, true, false, Stream::out, "  3: loss 0.5\n", "1>  3: loss 0.5\n"},
      {"kept when the job set SLURM_LABELIO", srun, false, true, Stream::err, "3: x\n", "2>3: x\n"},
      {"srun's own line as it is", srun, false, false, Stream::err,
       "srun: error: node02: task 3: Killed\n", "2>srun: error: node02: task 3: Killed\n"},
      {"not srun: a number and a colon are the program's",
       {"python", "t.py"},
       false,
       false,
       Stream::out,
       "12: loss\n",
       "1>12: loss\n"},
      {"an unfinished line waits for its end", srun, false, false, Stream::out, "0: a\n0: b",
       "1>a\n"},
      {"a progress bar's carriage returns stay in its line", srun, false, false, Stream::err,
       "0:  10%\r 20%\r 30%\n", "2> 10%\r 20%\r 30%\n"},
      {"the helper's notice is read, not written", srun, false, false, Stream::helper_out,
       "ddp-watch-dump: task 1 rank 3 pid 4242 node node02 main\n", ""},
      {"the helper's other lines go to stderr", srun, false, false, Stream::helper_out,
       "srun: error: x\n", "2>srun: error: x\n"},
  };
  for (const Case& c : cases) {
    Options o = options(c.command);
    o.keep_labels = c.keep_labels;
    Supervisor s(o, {"", "", "", "", c.labelio, "", std::nullopt});
    s.started(t0);
    EXPECT_EQ(texts(s.on_output(t0, c.stream, c.bytes)), c.written) << c.name;
  }
}

TEST(WatchStepOutput, TheLastUnfinishedLineAtTheEnd) {
  Supervisor s(options({"srun", "python", "t.py"}), {});
  s.started(t0);
  EXPECT_EQ(texts(s.on_output(t0, Stream::out, "0: a\n0: b")), "1>a\n");
  EXPECT_EQ(texts(s.on_end(Stream::err)), "");  // another stream's end
  EXPECT_EQ(texts(s.on_end(Stream::out)), "1>b\n");
  EXPECT_EQ(texts(s.on_end(Stream::out)), "");  // once
}

// After the stack request the dumps go to the stacks file; the program's own lines and srun's
// still reach the job's output.
TEST(WatchStepOutput, AfterTheStackRequestTheDumpsAreHeldBack) {
  Supervisor s(options({"srun", "python", "t.py"}), {});
  s.started(t0);
  ASSERT_EQ(s.on_tick(t0 + seconds(20)).act, Act::ask_stacks);
  EXPECT_EQ(texts(s.on_output(t0 + seconds(21), Stream::err,
                              "0: Fatal Python error: Aborted\n"
                              "1: step 41 loss 0.3\n"
                              "0: \n"
                              "0: Current thread 0x00007f (most recent call first):\n"
                              "0:   File \"/work/train.py\", line 8 in load_batch\n"
                              "srun: error: node01: task 0: Aborted\n")),
            "2>step 41 loss 0.3\n2>srun: error: node01: task 0: Aborted\n");
}

TEST(WatchStepOutput, LineBufferCutsLongLines) {
  LineBuffer b;
  EXPECT_TRUE(b.add("ab").empty());
  EXPECT_EQ(b.add("c\nd\n\ne"), (std::vector<BufferedLine>{{"abc"}, {"d"}, {""}}));
  const std::string long_line(LineBuffer::k_max_line + 1, 'x');
  EXPECT_EQ(b.add(long_line), (std::vector<BufferedLine>{{"e" + long_line}}));
  EXPECT_FALSE(b.finish());
  // The rest of a cut line is marked: it does not start a line, whatever it says.
  EXPECT_EQ(b.add("srun: error: x\nnext\n"),
            (std::vector<BufferedLine>{{"srun: error: x", true}, {"next"}}));
  b.add("tail");
  EXPECT_EQ(b.finish(), (BufferedLine{"tail"}));
  EXPECT_FALSE(b.finish());
}
