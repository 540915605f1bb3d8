// The watch loop's edge: starts the command, polls its pipes and the helper's, reads the clock
// and the watched files' mtimes, signals the process group, runs Slurm's clients, writes the
// stacks file. Every decision is the Supervisor's (supervise_core.hpp).
#include "ddp-watch/supervise.hpp"

#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "ddp-watch/heal_run.hpp"
#include "ddp-watch/respawn_run.hpp"
#include "ddp-watch/slurm.hpp"
#include "ddp-watch/supervise_core.hpp"
#include "libddp/sys/exec.hpp"
#include "libddp/sys/system.hpp"

namespace ddp::watch {
namespace {

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

void write_all(const std::vector<Write>& writes) {
  for (const Write& w : writes) write_all(w.fd, w.text);
}

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

std::optional<std::string> optional_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

// 16 lowercase hex digits from the kernel's random source: a run tag (suspect.hpp) nobody can
// have printed before this run; "" when there is no randomness to be had (no tag is asked for).
std::string fresh_run_tag() {
  return sys::random_hex(8).value_or("");
}

// The job's variables, and a fresh run tag: each Watch is one run of its command.
JobEnv job_env() {
  return {env_or("SLURM_JOB_ID", ""),
          env_or("SLURM_ARRAY_JOB_ID", ""),
          env_or("SLURM_ARRAY_TASK_ID", ""),
          env_or("SLURM_RESTART_COUNT", ""),
          std::getenv("SLURM_LABELIO") != nullptr,
          fresh_run_tag(),
          optional_env("SLURM_SPANK__SLURM_SPANK_OPTION_ddp_ddp")};
}

class Watch {
 public:
  // `check`: the check of a respawn's nodes (--respawn-check), whose success ends nothing.
  Watch(const Options& o, Respawner& respawner, bool check = false)
      : o_(o), core_(o, job_env()), respawner_(respawner), check_(check) {}
  int run();
  // Whether a new step is to replace this one (--spares).
  bool respawn() const { return respawn_; }

 private:
  void pump(int& fd, Stream stream);
  bool poll_once(int timeout_ms = 1000);
  void check_files();
  void act(const Action& a);
  void ask_stacks();
  void probe();
  void read_layout();
  bool start_helper(const StackRequest::Helper& h);
  static bool signal_steps(const std::vector<std::string>& steps);
  bool child_ended();
  void drain_after_end();
  void end_helper();
  int finish(const Outcome& o);

  const Options& o_;
  Supervisor core_;
  Started child_;
  int child_status_ = -1;  // its wait status, once it ended
  Started helper_;         // the per-node stack helper (torchrun)
  Respawner& respawner_;
  bool check_ = false;
  bool respawn_ = false;
  std::chrono::steady_clock::time_point ended_at_{};  // when the command was reaped
};

// Reads what is there and hands it to the core; at the end of the stream closes `fd` and sets
// it to -1.
void Watch::pump(int& fd, Stream stream) {
  char buf[65536];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0 && errno == EINTR) return;
  if (n <= 0) {
    write_all(core_.on_end(stream));
    close(fd);
    fd = -1;
    return;
  }
  write_all(core_.on_output(Clock::now(), stream, {buf, static_cast<std::size_t>(n)}));
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
  if (fds[0].revents != 0) pump(child_.out, Stream::out);
  if (fds[1].revents != 0) pump(child_.err, Stream::err);
  if (fds[2].revents != 0) pump(helper_.out, Stream::helper_out);
  if (fds[3].revents != 0) pump(helper_.err, Stream::helper_err);
  return true;
}

// The modification times of the heartbeat and of the files srun writes the output to.
void Watch::check_files() {
  const auto& files = core_.watched();
  for (std::size_t i = 0; i < files.size(); ++i) {
    struct stat st {};
    if (stat(files[i].c_str(), &st) != 0) continue;
    core_.on_file_time(Clock::now(), i, {st.st_mtim.tv_sec, st.st_mtim.tv_nsec});
  }
}

void Watch::act(const Action& a) {
  if (a.act == Act::none) return;
  if (a.act == Act::probe) {
    probe();
    return;
  }
  if (a.act == Act::layout) {
    read_layout();
    return;
  }
  announce(a.message);
  if (a.act == Act::ask_stacks) {
    ask_stacks();
    return;
  }
  for (const std::string& s : a.steps) signal_step(s, "KILL");
  kill(-child_.pid, SIGKILL);
}

// Asks every task for its Python stack, in the core's order: the helper step, else scancel
// --signal=ABRT on the command's steps, else the command's process group outside Slurm.
void Watch::ask_stacks() {
  StackRequest r = core_.stack_request(running_steps(env_or("SLURM_JOB_ID", "")), self_path());
  bool signalled = r.helper && start_helper(*r.helper);
  if (!signalled) signalled = signal_steps(r.steps);
  if (!signalled) kill(-child_.pid, SIGABRT);
}

// Each node's slurmstepd delivers a step's signal at its own moment: a rank aborted first closes
// its sockets, and a peer still running leaves its collective (a gloo "Connection closed by
// peer" traceback) before its own dump, which then shows no Python frame. So the steps are
// stopped first, where they stand; the ABRT stays pending until the CONT, and it is the first
// thing each process handles when it runs again. scancel only queues a signal at the
// controller, so a pause between the three keeps them in order on every node. Returns whether
// the ABRT reached any step.
bool Watch::signal_steps(const std::vector<std::string>& steps) {
  constexpr std::chrono::seconds k_signal_gap{1};
  bool stopped = false;
  for (const std::string& s : steps) stopped = signal_step(s, "STOP") || stopped;
  if (stopped) std::this_thread::sleep_for(k_signal_gap);
  bool signalled = false;
  for (const std::string& s : steps) signalled = signal_step(s, "ABRT") || signalled;
  if (stopped) {
    std::this_thread::sleep_for(k_signal_gap);
    for (const std::string& s : steps) signal_step(s, "CONT");
  }
  return signalled;
}

// Reads what the step's processes wrote on each node (the helper step, to its end within its
// deadline) and hands it to the core.
void Watch::probe() {
  auto r = core_.probe_request(running_steps(env_or("SLURM_JOB_ID", "")), self_path());
  std::string out;
  if (r) out = capture(r->argv, r->deadline);
  if (auto line = core_.on_probe(Clock::now(), out)) announce(*line);
}

// Asks Slurm how the command's step placed its tasks, for the crash summary's ranks.
void Watch::read_layout() {
  auto argv = core_.layout_request(running_steps(env_or("SLURM_JOB_ID", "")), Clock::now());
  std::string out;
  if (argv) out = capture(*argv, Supervisor::k_layout_deadline);
  core_.on_layout(out);
}

// Freezes the step on every node, then starts the helper that dumps it; false when the freeze
// or the start failed or passed its deadline (the caller then signals the step).
bool Watch::start_helper(const StackRequest::Helper& h) {
  const auto freezing = std::chrono::steady_clock::now();
  if (!run_command(h.freeze, h.deadline)) {
    announce(std::string(k_freeze_failed));
    return false;
  }
  // The dump helper's tasks start signalling together (dump_delay()).
  using std::chrono::milliseconds;
  const auto froze =
      std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - freezing);
  const auto at = std::chrono::system_clock::now() + dump_delay(froze, o_.grace_s);
  std::vector<std::string> dump = h.dump;
  dump.push_back(
      "--dump-at=" +
      std::to_string(std::chrono::duration_cast<milliseconds>(at.time_since_epoch()).count()));
  auto started = ddp::sys::start(dump, {});
  if (!started) {
    announce(started.error().message);
    return false;
  }
  helper_ = *started;
  return true;
}

// Whether the command has ended (reaped, its status kept).
bool Watch::child_ended() {
  if (child_status_ >= 0) return true;
  int status = 0;
  pid_t done = waitpid(child_.pid, &status, WNOHANG);
  if (done == child_.pid) {
    child_status_ = status;
    ended_at_ = std::chrono::steady_clock::now();
  }
  return child_status_ >= 0;
}

// The command has ended: what it printed last is read, but a descendant that keeps its output
// open (one that left its process group) is not waited for beyond a few seconds.
void Watch::drain_after_end() {
  const auto until = Clock::now() + k_drain_after_end;
  while ((child_.out >= 0 || child_.err >= 0) && Clock::now() < until && poll_once(200)) {
  }
  for (int* fd : {&child_.out, &child_.err}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  write_all(core_.on_end(Stream::out));
  write_all(core_.on_end(Stream::err));
}

// The helper's last notices may still be on their way; then it is ended.
void Watch::end_helper() {
  const auto until = Clock::now() + k_helper_notices_wait;
  while ((helper_.out >= 0 || helper_.err >= 0) && Clock::now() < until) poll_once();
  if (helper_.pid > 0) {
    kill(-helper_.pid, SIGKILL);
    waitpid(helper_.pid, nullptr, 0);
  }
}

// Carries out what follows the command's end: the stacks file, the announcements, the
// requeue, healing.
int Watch::finish(const Outcome& o) {
  bool written = true;
  if (o.stalled) {
    std::ofstream file(o.stacks_path);
    file << o.report.stacks;
    file.close();
    written = static_cast<bool>(file);
  }
  for (const std::string& line : o.announce) announce(line);
  if (o.stalled) announce(stacks_message(o.report.dumps, o.stacks_path, written));
  if (o.requeue) {
    announce(o.requeue->message);
    if (o.requeue->requeue &&
        !run_command({"scontrol", "requeue", o.requeue_target}, std::chrono::seconds(30))) {
      announce("scontrol requeue " + o.requeue_target +
               " failed: the job ends here (is it requeueable?)");
    }
  }
  if (o.heal) {
    const Respawner::Next next = respawner_.after(o.heal_failed, o.heal_suspects, ended_at_);
    respawn_ = next == Respawner::Next::respawn;
    if (respawn_) return o.code;
    if (check_ && !o.heal_failed) return o.code;  // the nodes passed: the step starts
    if (next == Respawner::Next::heal) {
      heal_after(o_, o.heal_failed, respawner_.heal_suspects());
    } else {
      heal_end(o_);  // the fault follows the job: it ends here, as heal's own end does
    }
    respawner_.summary();
  }
  return o.code;
}

int Watch::run() {
  if (auto refused = core_.refusal()) return finish(*refused);
  core_.steps_before(running_steps(env_or("SLURM_JOB_ID", "")));
  check_files();  // a heartbeat left by an earlier run is not progress of this one
  auto started = ddp::sys::start(o_.command, core_.command_env());
  if (!started) return finish(Supervisor::start_failed(started.error().message));
  child_ = *started;
  core_.started(Clock::now());
  while (!child_ended()) {
    poll_once();
    if (g_forward != 0) {
      kill(child_.pid, static_cast<int>(g_forward));
      g_forward = 0;
    }
    check_files();
    act(core_.on_tick(Clock::now()));
  }
  drain_after_end();
  end_helper();
  return finish(core_.on_exit(ddp::sys::exit_status(child_status_)));
}

}  // namespace

int supervise(const Options& options) {
  struct sigaction sa {};
  sa.sa_handler = remember_signal;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT}) sigaction(sig, &sa, nullptr);
  Respawner respawner(options);
  if (!respawner.refusal().empty()) {
    announce(respawner.refusal());
    return k_exit_usage;
  }
  if (respawner.first_check_due()) {
    // Every node of the job is checked first, under the heal path: the first step avoids the
    // nodes it names (a respawn), or the heal path excludes them and requeues.
    Options check = options;
    check.command = respawner.first_check_command();
    check.heartbeat.clear();
    Watch checking(check, respawner, true);
    const int code = checking.run();
    if (!checking.respawn() && code != 0) return code;
  }
  // One Watch per step: a respawn starts the next on other nodes of the job.
  for (;;) {
    Options step = options;
    step.command = respawner.next_command();
    if (respawner.check_due()) {
      // The new step's nodes are checked first, under the same heal path: a node the check
      // names is replaced in turn, a failure without a name ends the job as a preflight's does.
      Options check = options;
      check.command = respawner.check_command();
      check.heartbeat.clear();
      Watch checking(check, respawner, true);
      const int code = checking.run();
      if (checking.respawn()) continue;
      if (code != 0) return code;
      respawner.check_passed();
    }
    Watch watch(step, respawner);
    const int code = watch.run();
    if (!watch.respawn()) return code;
  }
}

}  // namespace ddp::watch
