#include "supervise.hpp"

#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>

#include "crash.hpp"
#include "report.hpp"
#include "slurm.hpp"

namespace ddp::watch {
namespace {

using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_forward = 0;  // a signal to pass on to the command
void remember_signal(int sig) {
  g_forward = sig;
}

void say(const std::string& text) {
  std::string line = "ddp-watch: " + text + "\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

class Watch {
 public:
  explicit Watch(const Options& o) : o_(o), job_(env_or("SLURM_JOB_ID", "")) {
    labels_ = std::getenv("SLURM_LABELIO") == nullptr || o.keep_labels;
    keep_labels_ = std::getenv("SLURM_LABELIO") != nullptr || o.keep_labels;
    reader_.set_task_is_rank(!launches_torchrun(o.command));
  }
  int run();

 private:
  void pump(int fd, std::string& pending, int out_fd);
  void line(std::string_view raw, int out_fd);
  void check_heartbeat();
  void stall();
  void finish_stall();
  int report(int status);

  const Options& o_;
  std::string job_;
  bool labels_ = true, keep_labels_ = false;
  Child child_;
  std::string out_pending_, err_pending_;
  Clock::time_point last_progress_ = Clock::now();
  Clock::time_point kill_at_{};
  bool stalled_ = false, killed_ = false;
  timespec heartbeat_mtime_{};
  std::vector<std::string> before_;  // steps that ran before the command: not ours
  std::vector<std::string> ours_;
  std::vector<Line> captured_;
  std::set<int> tasks_;
  CrashReader reader_;
};

void Watch::line(std::string_view raw, int out_fd) {
  Line l = labels_ ? split_label(raw) : Line{-1, std::string(raw)};
  if (l.task >= 0) tasks_.insert(l.task);
  std::string_view shown = keep_labels_ || l.task < 0 ? raw : std::string_view(l.text);
  write_all(out_fd, shown);
  write_all(out_fd, "\n");
  reader_.add(l);
  if (stalled_ && captured_.size() < 1'000'000) captured_.push_back(std::move(l));
  last_progress_ = Clock::now();
}

// Reads what is there and forwards whole lines; a line longer than 64 KiB goes out in pieces.
void Watch::pump(int fd, std::string& pending, int out_fd) {
  char buf[65536];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0 && errno == EINTR) return;
  if (n <= 0) {
    if (!pending.empty()) line(pending, out_fd);
    pending.clear();
    close(fd);
    (fd == child_.out ? child_.out : child_.err) = -1;
    return;
  }
  pending.append(buf, static_cast<std::size_t>(n));
  std::size_t start = 0;
  for (std::size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
    line(std::string_view(pending).substr(start, nl - start), out_fd);
  }
  pending.erase(0, start);
  if (pending.size() > 65536) {
    line(pending, out_fd);
    pending.clear();
  }
}

void Watch::check_heartbeat() {
  struct stat st {};
  if (o_.heartbeat.empty() || stat(o_.heartbeat.c_str(), &st) != 0) return;
  if (st.st_mtim.tv_sec != heartbeat_mtime_.tv_sec ||
      st.st_mtim.tv_nsec != heartbeat_mtime_.tv_nsec) {
    heartbeat_mtime_ = st.st_mtim;
    last_progress_ = Clock::now();
  }
}

// Asks every task for its Python stack: scancel --signal=ABRT on the job's new steps (srun
// does not forward SIGABRT), or the command's process group outside Slurm.
void Watch::stall() {
  stalled_ = true;
  say("no progress for " + std::to_string(o_.timeout_s) + " s (no output" +
      (o_.heartbeat.empty() ? "" : ", heartbeat unchanged") + "): asking every task for its stack");
  for (const std::string& s : running_steps(job_)) {
    if (std::find(before_.begin(), before_.end(), s) == before_.end()) ours_.push_back(s);
  }
  bool signalled = false;
  for (const std::string& s : ours_) signalled = signal_step(s, "ABRT") || signalled;
  if (!signalled) kill(-child_.pid, SIGABRT);
  kill_at_ = Clock::now() + std::chrono::seconds(o_.grace_s);
}

// The grace is over and the step still runs: end it.
void Watch::finish_stall() {
  killed_ = true;
  say("the step still runs " + std::to_string(o_.grace_s) +
      " s after the stack request: ending it");
  for (const std::string& s : ours_) signal_step(s, "KILL");
  kill(-child_.pid, SIGKILL);
}

int Watch::run() {
  std::vector<std::string> env = {"PYTHONFAULTHANDLER=1"};
  if (labels_) env.push_back("SLURM_LABELIO=1");
  if (!o_.heartbeat.empty()) env.push_back("DDP_HEARTBEAT_FILE=" + o_.heartbeat);
  before_ = running_steps(job_);
  child_ = spawn(o_.command, env);
  if (child_.pid < 0) {
    say("cannot start " + o_.command[0]);
    return 127;
  }
  check_heartbeat();
  last_progress_ = Clock::now();
  while (child_.out >= 0 || child_.err >= 0) {
    pollfd fds[2] = {{child_.out, POLLIN, 0}, {child_.err, POLLIN, 0}};
    int n = poll(fds, 2, 1000);
    if (g_forward != 0) {
      kill(child_.pid, static_cast<int>(g_forward));
      g_forward = 0;
    }
    if (n > 0) {
      if (fds[0].revents != 0) pump(child_.out, out_pending_, STDOUT_FILENO);
      if (fds[1].revents != 0) pump(child_.err, err_pending_, STDERR_FILENO);
    }
    check_heartbeat();
    auto now = Clock::now();
    if (!stalled_ && now - last_progress_ >= std::chrono::seconds(o_.timeout_s)) stall();
    if (stalled_ && !killed_ && now >= kill_at_) finish_stall();
  }
  int status = 0;
  while (waitpid(child_.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return report(status);
}

int Watch::report(int status) {
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (stalled_) {
    StallReport r = stall_report(captured_, reader_.facts(), {tasks_.begin(), tasks_.end()});
    std::string path =
        o_.stacks.empty() ? "ddp-watch-" + env_or("SLURM_JOB_ID", "local") + ".stacks" : o_.stacks;
    std::ofstream(path) << r.stacks;
    say("verdict: " + r.verdict);
    say("stacks of " + std::to_string(r.dumps) + " process(es): " + path);
    return k_exit_stall;
  }
  if (code != 0) {
    std::string summary = crash_summary(reader_.facts());
    if (!summary.empty()) say(summary);
  }
  return code;
}

}  // namespace

int supervise(const Options& options) {
  struct sigaction sa {};
  sa.sa_handler = remember_signal;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT}) sigaction(sig, &sa, nullptr);
  return Watch(options).run();
}

}  // namespace ddp::watch
