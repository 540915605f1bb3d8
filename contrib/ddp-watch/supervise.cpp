#include "ddp-watch/supervise.hpp"

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
#include <thread>

#include "ddp-watch/crash.hpp"
#include "ddp-watch/dump_plan.hpp"
#include "ddp-watch/evidence.hpp"
#include "ddp-watch/heal_run.hpp"
#include "ddp-watch/report.hpp"
#include "ddp-watch/schedule.hpp"
#include "ddp-watch/slurm.hpp"
#include "ddp-watch/traceback.hpp"
#include "libddp/core/hostlist.hpp"
#include "libddp/sys/exec.hpp"
#include "libddp/util/text.hpp"

namespace ddp::watch {
namespace {

using ddp::Hostlist;
using ddp::sys::Started;

volatile std::sig_atomic_t g_forward = 0;  // a signal to pass on to the command
void remember_signal(int sig) {
  g_forward = sig;
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
  explicit Watch(const Options& o)
      : o_(o),
        job_(env_or("SLURM_JOB_ID", "")),
        schedule_(o.timeout_s, o.startup_s, o.grace_s, Clock::now()) {
    // Only srun's output is labelled: another command's "12: loss" is its own text.
    labels_ = is_srun(o.command);
    keep_labels_ = std::getenv("SLURM_LABELIO") != nullptr || o.keep_labels;
    torchrun_ = launches_per_node(o.command);
    reader_.set_task_is_rank(!torchrun_);
    reader_.set_srun(labels_);
    preflight_ = std::any_of(o.command.begin(), o.command.end(), [](const std::string& w) {
      return w == "ddp-check" || w.ends_with("/ddp-check");
    });
  }
  int run();

 private:
  template <class Sink>
  void pump(int& fd, std::string& pending, Sink sink);
  bool poll_once(int timeout_ms = 1000);
  void line(std::string_view raw, int out_fd);
  void helper_line(std::string_view raw);
  bool start_helper();
  void check_heartbeat();
  void forward(const Line& l, std::string_view raw, int out_fd);
  bool watch_files();
  bool child_ended();
  void drain_after_end();
  void stall();
  void finish_stall();
  int report(int status);
  void requeue();
  void gather_suspects(const std::string& text);

  const Options& o_;
  std::string job_;
  bool labels_ = true, keep_labels_ = false;
  Schedule schedule_;
  Started child_;
  int child_status_ = -1;  // its wait status, once it ended
  std::string out_pending_, err_pending_;
  // The heartbeat and the files srun writes the output to: a new mtime is progress.
  std::vector<std::pair<std::string, timespec>> watched_;
  std::vector<std::string> before_;  // steps that ran before the command: not ours
  std::vector<StepRow> ours_;
  bool torchrun_ = false;
  Started helper_;  // the per-node stack helper (torchrun)
  std::string helper_out_, helper_err_;
  std::vector<StepProcess> notices_;
  std::vector<Line> captured_;
  std::size_t captured_bytes_ = 0;  // bounded: a step may print without end after the signal
  DumpFilter dumps_;
  std::set<int> tasks_;
  CrashReader reader_;
  // --heal: the nodes named so far. Suspect lines count only from ddp-check, the preflight:
  // a training program's own output must not exclude nodes.
  bool preflight_ = false;
  std::vector<Suspect> suspects_;
};

void Watch::gather_suspects(const std::string& text) {
  if (o_.heal.empty()) return;
  if (auto s = preflight_ ? ddp::parse_suspect_line(text) : std::nullopt) suspects_.push_back(*s);
  for (Suspect& s : srun_suspects(text)) suspects_.push_back(std::move(s));
}

// Writes one line of the step to our stdout or stderr: with its label when asked to keep them.
void Watch::forward(const Line& l, std::string_view raw, int out_fd) {
  if (l.task < 0 || keep_labels_) {
    write_all(out_fd, raw.empty() ? std::string_view(l.text) : raw);
  } else {
    write_all(out_fd, l.text);
  }
  write_all(out_fd, "\n");
}

void Watch::line(std::string_view raw, int out_fd) {
  Line whole = labels_ ? split_label(raw) : Line{-1, std::string(raw)};
  if (whole.task >= 0) tasks_.insert(whole.task);
  const bool stalled = schedule_.is_stalled();
  if (!stalled || whole.task < 0) forward(whole, raw, out_fd);
  for (Line& l : split_at_dump(std::move(whole))) {
    // After the stack request the dumps go to the stacks file, not into the job's output;
    // what else the tasks print meanwhile is forwarded as before.
    if (stalled && l.task >= 0 && !dumps_.in_dump(l)) {
      forward(l, keep_labels_ ? std::to_string(l.task) + ": " + l.text : "", out_fd);
    }
    reader_.add(l);
    gather_suspects(l.text);
    if (stalled && captured_bytes_ < (64u << 20)) {
      captured_bytes_ += l.text.size() + 16;
      captured_.push_back(std::move(l));
    }
  }
}

// Reads what is there and hands whole lines to `sink`; a line longer than 64 KiB goes in
// pieces. Every byte is progress: a progress bar redraws with a carriage return and ends its
// line only when it is done. Closes `fd` and sets it to -1 at the end of the stream.
template <class Sink>
void Watch::pump(int& fd, std::string& pending, Sink sink) {
  char buf[65536];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0 && errno == EINTR) return;
  if (n <= 0) {
    if (!pending.empty()) sink(pending);
    pending.clear();
    close(fd);
    fd = -1;
    return;
  }
  schedule_.progress(Clock::now());
  pending.append(buf, static_cast<std::size_t>(n));
  std::size_t start = 0;
  for (std::size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
    sink(std::string_view(pending).substr(start, nl - start));
  }
  pending.erase(0, start);
  if (pending.size() > 65536) {
    sink(pending);
    pending.clear();
  }
}

// Waits up to `timeout_ms` for output of the command or the helper and handles it; whether
// there was any.
bool Watch::poll_once(int timeout_ms) {
  if (child_.out < 0 && child_.err < 0 && helper_.out < 0 && helper_.err < 0) {
    // Both pipes closed while the command runs on (srun -o FILE, a program that closed its
    // output): poll would return at once.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(timeout_ms, 200)));
    return false;
  }
  pollfd fds[4] = {{child_.out, POLLIN, 0},
                   {child_.err, POLLIN, 0},
                   {helper_.out, POLLIN, 0},
                   {helper_.err, POLLIN, 0}};
  if (poll(fds, 4, timeout_ms) <= 0) return false;
  auto to_out = [this](std::string_view l) { line(l, STDOUT_FILENO); };
  auto to_err = [this](std::string_view l) { line(l, STDERR_FILENO); };
  auto to_helper = [this](std::string_view l) { helper_line(l); };
  if (fds[0].revents != 0) pump(child_.out, out_pending_, to_out);
  if (fds[1].revents != 0) pump(child_.err, err_pending_, to_err);
  if (fds[2].revents != 0) pump(helper_.out, helper_out_, to_helper);
  if (fds[3].revents != 0) pump(helper_.err, helper_err_, to_helper);
  return true;
}

// A new modification time of the heartbeat, or of a file srun writes the output to, is
// progress.
void Watch::check_heartbeat() {
  for (auto& [path, mtime] : watched_) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) continue;
    if (st.st_mtim.tv_sec != mtime.tv_sec || st.st_mtim.tv_nsec != mtime.tv_nsec) {
      mtime = st.st_mtim;
      schedule_.progress(Clock::now());
    }
  }
}

// Asks every task for its Python stack: scancel --signal=ABRT on the job's new steps (srun
// does not forward SIGABRT), or the command's process group outside Slurm. torchrun's workers
// share their launcher's output, so there a helper on each node signals them one at a time.
// The grace starts now, whatever the helper does: the kill stays on time.
void Watch::stall() {
  schedule_.stalled(Clock::now());
  announce(stall_message(schedule_.limit_s(), !watched_.empty()));
  for (StepRow& s : running_steps(job_)) {
    if (std::find(before_.begin(), before_.end(), s.id) == before_.end()) ours_.push_back(s);
  }
  bool signalled = start_helper();
  if (!signalled) {
    for (const StepRow& s : ours_) signalled = signal_step(s.id, "ABRT") || signalled;
  }
  if (!signalled) kill(-child_.pid, SIGABRT);
}

// Freezes the step on every node, then starts the helper that dumps it; false when the freeze
// or the start failed or passed its deadline (the caller then signals the step).
bool Watch::start_helper() {
  if (ours_.size() != 1) return false;
  auto nodes = Hostlist::count(ours_[0].nodes);
  if (!nodes) return false;
  // One task per node of the step; --ntasks overrides the batch shell's SLURM_NTASKS.
  auto helper = [&](const char* what) {
    return std::vector<std::string>{"srun",
                                    "--overlap",
                                    "--jobid=" + job_,
                                    "--nodelist=" + ours_[0].nodes,
                                    "--ntasks=" + std::to_string(*nodes),
                                    "--ntasks-per-node=1",
                                    "--kill-on-bad-exit=0",
                                    "--time=1",
                                    self_path(),
                                    what,
                                    ours_[0].id};
  };
  // First every process of the step stops, on every node, and only then does any worker dump
  // and die: a worker still running on another node would leave its collective when its peer
  // dies, and print the stack of its error handling instead of where it waited.
  if (!run_command(helper("--freeze-step"), schedule_.helper_deadline())) {
    announce("the helper step could not freeze the step in time: signalling the step instead");
    return false;
  }
  auto started = ddp::sys::start(helper("--dump-step"), {});
  if (!started) {
    announce(started.error().message);
    return false;
  }
  helper_ = *started;
  return true;
}

void Watch::helper_line(std::string_view raw) {
  StepProcess p;
  if (parse_dump_notice(std::string(raw), p)) {
    notices_.push_back(p);
    return;
  }
  write_all(STDERR_FILENO, std::string(raw) + "\n");
}

// The grace is over and the step still runs: end it.
void Watch::finish_stall() {
  schedule_.killed();
  announce("the step still runs " + std::to_string(o_.grace_s) +
           " s after the stack request: ending it");
  for (const StepRow& s : ours_) signal_step(s.id, "KILL");
  kill(-child_.pid, SIGKILL);
}

// The heartbeat, and the files srun is told to write the output to (that output never reaches
// us); false, said, when srun's output goes to files whose names we cannot resolve and there is
// no heartbeat: every run would read as a stall.
bool Watch::watch_files() {
  if (!o_.heartbeat.empty()) watched_.emplace_back(o_.heartbeat, timespec{});
  OutputFiles files = srun_output_files(o_.command);
  for (std::string& f : files.plain) watched_.emplace_back(std::move(f), timespec{});
  if (!files.patterned.empty() && o_.heartbeat.empty()) {
    announce(
        "srun writes the step's output to " + ddp::text::quote(files.patterned.front()) +
        ", which ddp-watch cannot follow: drop -o/-e (ddp-watch forwards the output itself) or "
        "give --heartbeat FILE");
    return false;
  }
  return true;
}

// Whether the command has ended (reaped, its status kept).
bool Watch::child_ended() {
  if (child_status_ >= 0) return true;
  int status = 0;
  pid_t done = waitpid(child_.pid, &status, WNOHANG);
  if (done == child_.pid) child_status_ = status;
  return child_status_ >= 0;
}

// The command has ended: what it printed last is read, but a descendant that keeps its output
// open (one that left its process group) is not waited for beyond a few seconds.
void Watch::drain_after_end() {
  const auto until = Clock::now() + std::chrono::seconds(3);
  while ((child_.out >= 0 || child_.err >= 0) && Clock::now() < until && poll_once(200)) {
  }
  for (int* fd : {&child_.out, &child_.err}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  for (std::string* pending : {&out_pending_, &err_pending_}) {
    if (!pending->empty()) line(*pending, pending == &out_pending_ ? STDOUT_FILENO : STDERR_FILENO);
    pending->clear();
  }
}

int Watch::run() {
  // Built by push_back from empty: GCC 14 at -O2 reports a false -Warray-bounds for a vector
  // made from a one-element braced list and then grown (Debian 13's GCC 14.2).
  std::vector<std::string> env;
  env.reserve(3);
  env.push_back("PYTHONFAULTHANDLER=1");
  if (labels_) env.push_back("SLURM_LABELIO=1");
  if (!o_.heartbeat.empty()) env.push_back("DDP_HEARTBEAT_FILE=" + o_.heartbeat);
  if (!watch_files()) return k_exit_usage;
  for (const StepRow& s : running_steps(job_)) before_.push_back(s.id);
  check_heartbeat();  // a heartbeat left by an earlier run is not progress of this one
  auto started = ddp::sys::start(o_.command, env);
  if (!started) {
    announce(started.error().message);
    return 127;
  }
  child_ = *started;
  schedule_ = Schedule(o_.timeout_s, o_.startup_s, o_.grace_s, Clock::now());
  while (!child_ended()) {
    poll_once();
    if (g_forward != 0) {
      kill(child_.pid, static_cast<int>(g_forward));
      g_forward = 0;
    }
    check_heartbeat();
    Due due = schedule_.due(Clock::now());
    if (due == Due::stall) stall();
    if (due == Due::kill) finish_stall();
  }
  drain_after_end();
  // The helper's last notices may still be on their way.
  auto helper_deadline = Clock::now() + std::chrono::seconds(10);
  while ((helper_.out >= 0 || helper_.err >= 0) && Clock::now() < helper_deadline) poll_once();
  if (helper_.pid > 0) {
    kill(-helper_.pid, SIGKILL);
    waitpid(helper_.pid, nullptr, 0);
  }
  return report(child_status_);
}

// Puts the job back in the queue within the restart cap; Slurm then ends this run.
void Watch::requeue() {
  const std::string target =
      requeue_target(job_, env_or("SLURM_ARRAY_JOB_ID", ""), env_or("SLURM_ARRAY_TASK_ID", ""));
  RequeueDecision d = decide_requeue(target, env_or("SLURM_RESTART_COUNT", ""), o_.requeue_max);
  announce(d.message);
  if (d.requeue && !run_command({"scontrol", "requeue", target}, std::chrono::seconds(30))) {
    announce("scontrol requeue " + target + " failed: the job ends here (is it requeueable?)");
  }
}

int Watch::report(int status) {
  int code = ddp::sys::exit_status(status);
  if (schedule_.is_stalled()) {
    StallReport r =
        stall_report(captured_, reader_.facts(), {tasks_.begin(), tasks_.end()}, notices_);
    std::string path = stacks_path(o_.stacks, job_);
    std::ofstream file(path);
    file << r.stacks;
    file.close();
    announce("verdict: " + r.verdict);
    announce(
        "stacks of " + std::to_string(r.dumps) + " process(es): " + path +
        (file ? "" : " (could not be written: check --stacks and the directory's permissions)"));
    if (o_.requeue_max >= 0) requeue();
    suspects_.insert(suspects_.end(), r.suspects.begin(), r.suspects.end());
    if (!o_.heal.empty()) heal_after(o_, true, suspects_);
    return k_exit_stall;
  }
  if (code != 0) {
    std::string summary = crash_summary(reader_.facts());
    if (!summary.empty()) announce(summary);
    for (Suspect& s : crash_suspects(reader_.facts())) suspects_.push_back(std::move(s));
  }
  // A preflight that passed says nothing: the training step after it ends the job's output.
  if (!o_.heal.empty() && (code != 0 || !preflight_)) heal_after(o_, code != 0, suspects_);
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
