// ddp::sys::run and start: real programs (sh, cat, head), their output, status, environment,
// and the deadline that kills the whole process group.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "libddp/sys/exec.hpp"
#include "libddp/util/text.hpp"

namespace {

using namespace std::chrono_literals;
using ddp::sys::run;
using ddp::sys::RunOptions;

RunOptions deadline(std::chrono::milliseconds ms) {
  RunOptions o;
  o.deadline = ms;
  return o;
}

// Whether `pid` still runs: a zombie (killed, its parent gone, not yet reaped) does not.
bool alive(pid_t pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return false;
  char line[512] = {};
  const bool read = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  const char* close = std::strrchr(line, ')');
  return read && close != nullptr && close[1] == ' ' && close[2] != 'Z';
}

std::string read_all(int fd) {
  std::string out;
  char buf[256];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

TEST(Exec, CapturesStdoutAndTheExitCode) {
  auto r = run({"sh", "-c", "echo hello; exit 3"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->out, "hello\n");
  EXPECT_EQ(r->status, 3);
}

// merge_stderr: a client's error message (sbatch's refusal) comes back with its output, in the
// order written.
TEST(Exec, MergedStderrIsCapturedInOrder) {
  RunOptions merged;
  merged.merge_stderr = true;
  auto r = run({"sh", "-c", "echo one; echo two >&2; echo three; exit 1"}, merged);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->out, "one\ntwo\nthree\n");
  EXPECT_EQ(r->status, 1);
}

TEST(Exec, ASignalIs128PlusItsNumber) {
  auto r = run({"sh", "-c", "kill -TERM $$"});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 128 + SIGTERM);
}

TEST(Exec, AMissingProgramIsAnErrorNamingIt) {
  auto r = run({"ddp-no-such-program-here"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "cannot run ddp-no-such-program-here: No such file or directory");
  EXPECT_FALSE(run({}).has_value());
}

TEST(Exec, TheDeadlineKillsTheWholeGroup) {
  char path[] = "/tmp/ddp-exec-test.XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run({"sh", "-c", "sleep 30 & echo $! > \"$0\"; sleep 30", path}, deadline(300ms));
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "sh did not finish within 0.3 s and was killed");
  EXPECT_LT(took, 5s);
  auto r2 = run({"cat", path});
  unlink(path);
  ASSERT_TRUE(r2.has_value());
  auto background = ddp::text::parse_int(ddp::text::trim(r2->out));
  ASSERT_TRUE(background.has_value()) << r2->out;
  for (int i = 0; i < 100 && alive(*background); ++i) usleep(10000);
  EXPECT_FALSE(alive(*background)) << "the group's other process survived the deadline";
}

TEST(Exec, ADescendantHoldingStdoutIsNotWaitedFor) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run({"sh", "-c", "sleep 30 & echo $!"}, deadline(10s));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  auto pid = ddp::text::parse_int(ddp::text::trim(r->out));
  ASSERT_TRUE(pid.has_value()) << r->out;
  kill(*pid, SIGKILL);
}

TEST(Exec, EnvironmentStdinAndTheOutputCap) {
  RunOptions with_env;
  with_env.env = {"DDP_EXEC_TEST=x y"};
  auto r = run({"sh", "-c", "echo \"$DDP_EXEC_TEST\"; cat"}, with_env);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->out, "x y\n");  // and cat read /dev/null, not the test's stdin
  RunOptions small;
  small.max_output = 10;
  auto big = run({"head", "-c", "100000", "/dev/zero"}, small);
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->out.size(), 10u);
  EXPECT_EQ(big->status, 0);
  RunOptions inherit;
  inherit.capture = false;
  auto passed = run({"true"}, inherit);
  ASSERT_TRUE(passed.has_value());
  EXPECT_EQ(passed->status, 0);
}

TEST(Exec, StartPipesBothStreamsInAGroupOfItsOwn) {
  auto s = ddp::sys::start({"sh", "-c", "echo out; echo \"err $DDP_EXEC_TEST\" >&2"},
                           {"DDP_EXEC_TEST=1"});
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(getpgid(s->pid) == s->pid || !alive(s->pid), true);
  EXPECT_EQ(read_all(s->out), "out\n");
  EXPECT_EQ(read_all(s->err), "err 1\n");
  int status = 0;
  ASSERT_EQ(waitpid(s->pid, &status, 0), s->pid);
  EXPECT_EQ(ddp::sys::exit_status(status), 0);
  EXPECT_FALSE(ddp::sys::start({"ddp-no-such-program-here"}, {}).has_value());
}

TEST(Exec, ChildEnvironmentReplacesByName) {
  char a[] = "A=1", b[] = "AB=2";
  char* block[] = {a, b, nullptr};
  auto env = ddp::sys::child_environment(block, {"AB=3", "C=4", "A=5"});
  EXPECT_EQ(env, (std::vector<std::string>{"A=5", "AB=3", "C=4"}));
}

}  // namespace
