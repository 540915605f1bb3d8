// ddpgen logs JOBID --follow: a job watched from the login node until it ends. A look at Slurm
// every 2 s (scontrol, then sacct once the job has left slurmctld's memory), the output files
// read 4 times a second, each line shown once (terminal.hpp says where).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include "gen/app/job_output.hpp"
#include "gen/app/slurm_jobs.hpp"
#include "gen/app/terminal.hpp"
#include "gen/core/duration.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen::app {
namespace {

using Clock = std::chrono::steady_clock;

// Slurm is asked at most this often: a follower per user on a login node must stay cheap for
// slurmctld. The output file, a local read, is looked at more often.
constexpr auto k_look_every = std::chrono::seconds(2);
constexpr auto k_read_every = std::chrono::milliseconds(250);
// Consecutive failed looks (a controller restarting) before following gives up: about a minute.
constexpr int k_max_failed_looks = 30;

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
  g_interrupted = true;
}

// SIGINT (Ctrl-C) ends the watch, never the job; without SA_RESTART so that a sleep returns.
void catch_sigint() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
}

void pause_until(Clock::time_point until) {
  while (!g_interrupted && Clock::now() < until)
    std::this_thread::sleep_for(
        std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(50)));
}

class Follower {
 public:
  explicit Follower(std::string id) : id_(std::move(id)) {}

  int run() {
    catch_sigint();
    auto next_look = Clock::now();
    for (;;) {
      if (g_interrupted) return detach();
      // Output before any look saw the job run: it has started. One look at once (once per
      // follow: a file another job appends to must not make ddpgen ask Slurm 4 times a second),
      // so that "RUNNING on ..." comes before its first lines, not after them.
      const bool early = !held_.empty() && !looked_early_;
      if (Clock::now() >= next_look || early) {
        looked_early_ = looked_early_ || early;
        next_look = Clock::now() + k_look_every;
        if (auto end = look()) return *end;
        show_held();
      }
      read_outputs();
      if (ran_ || looked_early_) show_held();
      update_status();
      pause_until(std::min(next_look, Clock::now() + k_read_every));
    }
  }

 private:
  // One look at Slurm; the exit status once the job has ended (or cannot be followed).
  std::optional<int> look() {
    auto now = scontrol_job(id_);
    if (!now) {
      if (++failed_looks_ == 1 || failed_looks_ == k_max_failed_looks)
        say_note("scontrol cannot answer (" + now.error().to_string() + "); asking again");
      if (failed_looks_ < k_max_failed_looks) return std::nullopt;
      display_.clear_status();
      std::cerr << "ddpgen: error: job " << id_ << ": Slurm did not answer for a minute; follow "
                << "it again with: ddpgen logs " << id_ << " --follow\n";
      return 1;
    }
    failed_looks_ = 0;
    if (!*now) return gone();
    seen(**now);
    if (!is_final_state((*now)->state)) return std::nullopt;
    return finish(**now, true);
  }

  void seen(const JobStatus& now) {
    const auto files = output_files(now);
    // A file seen before is read on from where it was (a sweep's output adds its continuation).
    std::vector<OutputTail> tails;
    for (const auto& f : files) {
      auto it = std::ranges::find_if(tails_, [&](const OutputTail& t) { return t.path == f; });
      tails.push_back(it != tails_.end() ? std::move(*it) : OutputTail{f});
    }
    tails_ = std::move(tails);
    looked_at_ = Clock::now();
    const auto changes = job_changes(last_, now);
    last_ = now;
    ran_ = ran_ || now.state != "PENDING";
    update_status();  // first, so that the lines below leave the new status under them
    // Lines held before the job was seen running were written before this look: they come
    // before what it found, unless it found the job just started (RUNNING, said first).
    if (now.state != "RUNNING") show_held();
    // A final state is said once, by the final word.
    const bool final = is_final_state(now.state);
    for (const auto& line : changes)
      if (!final || line != state_line(now)) display_.event(line, now.state);
  }

  // The status line: the last look, its elapsed time counted on between looks while running.
  void update_status() {
    if (!last_) return;
    const JobStatus& now = *last_;
    std::string elapsed = now.elapsed;
    if (now.state == "RUNNING") {
      // "00:00:00" reads as nothing (duration::parse refuses a zero limit), which is 0 here.
      const long base = duration::parse(now.elapsed).value_or(0);
      const auto since =
          std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - looked_at_);
      elapsed = duration::format(base + static_cast<long>(since.count()));
    }
    std::string status = "job " + now.id + " " + now.state;
    if (!now.reason.empty()) status += " (" + now.reason + ")";
    if (!now.nodes.empty() && now.state != "PENDING") status += " on " + now.nodes;
    if (!elapsed.empty()) status += ", " + elapsed;
    if (now.restarts > 0) status += ", restart " + std::to_string(now.restarts);
    status += "  (Ctrl-C detaches)";
    display_.status(ddp::text::printable(status));
  }

  // The job left scontrol: sacct says how it ended, else the last look does, saying so.
  std::optional<int> gone() {
    auto acct = sacct_job(id_);
    if (acct && *acct && is_final_state((*acct)->state)) return finish(**acct, true);
    if (!last_) {
      display_.clear_status();
      std::cerr << "ddpgen: error: job " << id_ << " is not known to scontrol"
                << (acct ? *acct ? " (sacct: " + (*acct)->state + ")" : " nor to sacct"
                         : " and sacct cannot say: " + acct.error().to_string())
                << "\n";
      return 1;
    }
    return finish(*last_, is_final_state(last_->state));
  }

  int finish(const JobStatus& end, bool known) {
    show_held();
    // All the job wrote, which may be more than one read takes; bounded all the same.
    for (int reads = 0; reads < 64 && read_outputs() > 0; ++reads) show_held();
    for (auto& t : tails_)
      if (auto rest = t.lines.rest(); !rest.empty()) show(rest);
    display_.clear_status();
    const FinalWord word = final_word(end, last_verdict_, known);
    display_.event(word.line, known ? end.state : "UNKNOWN");
    return word.exit_status;
  }

  int detach() {
    display_.clear_status();
    // On a terminal, past the "^C" it echoed.
    if (::isatty(STDERR_FILENO) == 1) std::cerr << "\n";
    std::cerr << "ddpgen: detached from job " << id_ << ", which goes on; follow it again with: "
              << "ddpgen logs " << id_ << " --follow\n";
    return 130;
  }

  // Reads the output files; their new lines wait in held_ until show_held(). Returns the
  // number of bytes read.
  std::size_t read_outputs() {
    std::size_t bytes = 0;
    for (auto& t : tails_) {
      std::vector<std::string> notes;
      const std::string chunk = read_more(t, notes);
      for (const auto& n : notes) say_note(n);
      for (auto& line : t.lines.feed(chunk)) held_.push_back(std::move(line));
      bytes += chunk.size();
    }
    return bytes;
  }

  void show_held() {
    for (const auto& line : held_) show(line);
    held_.clear();
  }

  void show(const std::string& line) {
    const LineKind kind = classify_line(line);
    if (kind == LineKind::verdict) last_verdict_ = line;
    display_.output(line, kind);
  }

  void say_note(const std::string& text) {
    display_.event("job " + id_ + ": " + ddp::text::printable(text), last_ ? last_->state : "");
  }

  std::string id_;
  Display display_;
  std::optional<JobStatus> last_;
  Clock::time_point looked_at_;  // when last_ was seen
  std::vector<OutputTail> tails_;
  std::vector<std::string> held_;  // lines read, not shown yet
  bool ran_ = false;               // a look saw the job past PENDING
  bool looked_early_ = false;
  std::string last_verdict_;
  int failed_looks_ = 0;
};

}  // namespace

int follow_job(const std::string& id) {
  return Follower(id).run();
}

}  // namespace ddpgen::app
