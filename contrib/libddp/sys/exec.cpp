#include "libddp/sys/exec.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>
#include <thread>

extern char** environ;

namespace ddp::sys {
namespace {

using Clock = std::chrono::steady_clock;

// Pointers into `strings` for execvpe, null-terminated; valid while `strings` lives.
std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// What the child does with its standard streams: each is a descriptor to dup2 onto it, or -1
// to keep ours.
struct Streams {
  int in = -1;
  int out = -1;
  int err = -1;
};

// The forked child: its own process group, its streams, then exec. On failure it writes errno
// into `report` (close-on-exec, so the parent reads nothing when exec succeeds). Only
// async-signal-safe calls: the parent may have threads.
[[noreturn]] void exec_child(char* const* argv, char* const* envp, Streams s, int report) {
  setpgid(0, 0);
  if (s.in >= 0) dup2(s.in, STDIN_FILENO);
  if (s.out >= 0) dup2(s.out, STDOUT_FILENO);
  if (s.err >= 0) dup2(s.err, STDERR_FILENO);
  signal(SIGPIPE, SIG_DFL);
  execvpe(argv[0], argv, envp);
  int e = errno;
  (void)!write(report, &e, sizeof e);
  _exit(127);
}

// Forks and execs argv with `streams`; the child's pid, or the error naming argv[0].
Result<pid_t> fork_exec(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                        Streams streams) {
  if (argv.empty()) return fail("no program to run");
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = child_environment(environ, env);
  std::vector<char*> arg_ptrs = pointers(args), env_ptrs = pointers(envs);
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return fail(argv[0] + ": " + std::strerror(errno));
  const pid_t pid = fork();
  if (pid == 0) exec_child(arg_ptrs.data(), env_ptrs.data(), streams, report[1]);
  const int fork_errno = errno;
  close(report[1]);
  if (pid < 0) {
    close(report[0]);
    return fail("cannot run " + argv[0] + ": " + std::strerror(fork_errno));
  }
  setpgid(pid, pid);  // also here, so that a kill of the group right away reaches it
  int child_errno = 0;
  ssize_t n;
  while ((n = read(report[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return fail("cannot run " + argv[0] + ": " + std::strerror(child_errno));
  }
  return pid;
}

// Reads what `fd` holds now into `out` (up to `max` bytes kept); false at the end of the stream.
bool drain(int fd, std::string& out, std::size_t max) {
  std::array<char, 65536> buf;
  ssize_t n = read(fd, buf.data(), buf.size());
  if (n < 0) return errno == EINTR;
  if (n == 0) return false;
  const std::size_t room = max > out.size() ? max - out.size() : 0;
  out.append(buf.data(), std::min(room, static_cast<std::size_t>(n)));
  return true;
}

// Reads what `fd` holds without waiting for more.
void drain_now(int fd, std::string& out, std::size_t max) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::array<char, 65536> buf;
  for (ssize_t n; (n = read(fd, buf.data(), buf.size())) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;
    const std::size_t room = max > out.size() ? max - out.size() : 0;
    out.append(buf.data(), std::min(room, static_cast<std::size_t>(n)));
  }
}

// Waits for `pid` while reading `fd` (or only waiting, with fd -1) until `deadline`; the wait
// status, or nothing when the deadline passed first.
std::optional<int> wait_reading(pid_t pid, int fd, std::string& out, std::size_t max,
                                Clock::time_point deadline) {
  for (;;) {
    int status = 0;
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      // Whatever it wrote before it ended is in the pipe now; a descendant holding the pipe
      // open is not waited for.
      if (fd >= 0) drain_now(fd, out, max);
      return status;
    }
    const auto now = Clock::now();
    if (now >= deadline) return std::nullopt;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    const int wait_ms = static_cast<int>(std::min<long long>(left.count() + 1, 20));
    pollfd p{fd, POLLIN, 0};
    if (fd >= 0 && poll(&p, 1, wait_ms) > 0) {
      if (!drain(fd, out, max)) close_fd(fd);
    } else if (fd < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    }
  }
}

// Seconds, for a message: "10 s", "0.5 s".
std::string seconds_text(std::chrono::milliseconds ms) {
  const long long whole = ms.count() / 1000, tenths = (ms.count() % 1000) / 100;
  return std::to_string(whole) + (tenths != 0 ? "." + std::to_string(tenths) : "") + " s";
}

}  // namespace

std::vector<std::string> child_environment(char** environ_block,
                                           const std::vector<std::string>& add) {
  std::vector<std::string> out;
  for (char** e = environ_block; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  for (const std::string& entry : add) {
    const std::string_view name = std::string_view(entry).substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (std::string& existing : out) {
      if (!replaced && existing.starts_with(name)) {
        existing = entry;
        replaced = true;
      }
    }
    if (!replaced) out.push_back(entry);
  }
  return out;
}

int exit_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 255;
}

Result<RunResult> run(const std::vector<std::string>& argv, const RunOptions& options) {
  const auto deadline = Clock::now() + options.deadline;
  int out[2] = {-1, -1};
  if (options.capture && pipe2(out, O_CLOEXEC) != 0) {
    return fail("cannot run " + (argv.empty() ? std::string() : argv[0]) + ": " +
                std::strerror(errno));
  }
  const int null_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int err = options.capture && options.merge_stderr ? out[1] : -1;
  auto pid = fork_exec(argv, options.env, Streams{null_in, out[1], err});
  if (null_in >= 0) close(null_in);
  close_fd(out[1]);
  if (!pid) {
    close_fd(out[0]);
    return std::unexpected(pid.error());
  }
  RunResult result;
  auto status = wait_reading(*pid, out[0], result.out, options.max_output, deadline);
  close_fd(out[0]);
  if (!status) {
    kill(-*pid, SIGKILL);
    while (waitpid(*pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return fail(argv[0] + " did not finish within " + seconds_text(options.deadline) +
                " and was killed");
  }
  result.status = exit_status(*status);
  return result;
}

Result<Started> start(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    return fail("cannot run a program: " + std::string(std::strerror(errno)));
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return fail("cannot run a program: " + std::string(std::strerror(errno)));
  }
  auto pid = fork_exec(argv, env, Streams{-1, out[1], err[1]});
  close(out[1]);
  close(err[1]);
  if (!pid) {
    close(out[0]);
    close(err[0]);
    return std::unexpected(pid.error());
  }
  return Started{*pid, out[0], err[0]};
}

}  // namespace ddp::sys
