// ddpgen logs JOBID [--follow] and ddpgen status JOBID: a job watched from the login node. A look
// at Slurm every 2 s (scontrol, then sacct once the job has left slurmctld's memory), the output
// file read as it grows, each line shown once; on a terminal one status line that updates.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "gen/app/files.hpp"
#include "gen/app/slurm_jobs.hpp"
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
// Bytes read per look at an output file, and the most of an existing output shown on attaching.
constexpr std::size_t k_chunk = 1 << 20;

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

// Where the lines go: stdout, plain when piped; on a terminal with colour (unless NO_COLOR or
// TERM=dumb) and one status line at the bottom, redrawn in place.
class Display {
 public:
  Display() : tty_(::isatty(STDOUT_FILENO) == 1) {
    const char* term = std::getenv("TERM");
    colour_ = tty_ && std::getenv("NO_COLOR") == nullptr &&
              !(term != nullptr && std::string_view(term) == "dumb");
  }

  // A line of the job's output; verdicts stand out.
  void output(const std::string& line, LineKind kind) {
    const char* colour = kind == LineKind::verdict  ? "\033[1;31m"
                         : kind == LineKind::notice ? "\033[33m"
                                                    : nullptr;
    put(ddp::text::printable(line), colour);
  }

  // A line of ddpgen's own about the job: "ddpgen: job 4: RUNNING on node[01-03]".
  void event(const std::string& line, const std::string& state) {
    const char* colour = state == "COMPLETED"    ? "\033[1;32m"
                         : is_final_state(state) ? "\033[1;31m"
                         : state == "PENDING"    ? "\033[33m"
                                                 : "\033[1;36m";
    put("ddpgen: " + line, colour);
  }

  void status(const std::string& text) {
    if (!tty_) return;
    status_ = text;
    draw_status();
  }

  void clear_status() {
    if (tty_ && !status_.empty()) std::cout << "\r\033[K" << std::flush;
    status_.clear();
  }

 private:
  void put(const std::string& line, const char* colour) {
    if (tty_ && !status_.empty()) std::cout << "\r\033[K";
    if (colour_ && colour != nullptr)
      std::cout << colour << line << "\033[0m\n";
    else
      std::cout << line << "\n";
    draw_status();
  }

  // One line, cut to the terminal's width so that it never wraps (a wrapped line cannot be
  // redrawn in place).
  void draw_status() {
    if (!tty_ || status_.empty()) {
      std::cout << std::flush;
      return;
    }
    winsize ws{};
    std::size_t width =
        ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : 79;
    const std::string text = status_.substr(0, width);
    std::cout << "\r\033[K" << (colour_ ? "\033[7m" + text + "\033[0m" : text) << std::flush;
  }

  bool tty_;
  bool colour_ = false;
  std::string status_;
};

// One output file of the job, read from where the last read stopped.
struct Tail {
  explicit Tail(std::string file) : path(std::move(file)) {}
  std::string path;
  off_t offset = 0;
  bool attached = false;  // the first read (which may skip an old output's beginning) is done
  LineSplitter lines;
};

// Reads what path holds beyond t.offset (at most k_chunk bytes); says when the file began again
// (Slurm truncates it when a requeued job runs again, unless --open-mode=append).
std::string read_more(Tail& t, std::vector<std::string>& notes) {
  const int fd = ::open(t.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return "";
  struct stat st {};
  std::string out;
  // Only a regular file: an output of /dev/null or a FIFO is nothing to show.
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    if (!t.attached) {
      t.attached = true;
      if (static_cast<std::size_t>(st.st_size) > k_chunk) {
        t.offset = st.st_size - static_cast<off_t>(k_chunk);
        notes.push_back("the first " + std::to_string(t.offset) + " bytes of " + t.path +
                        " are not shown (ddpgen logs prints them all)");
      }
    } else if (st.st_size < t.offset) {
      notes.push_back(t.path + " began again (the job runs again; Slurm truncated its output)");
      t.offset = 0;
      t.lines.rest();
    }
    out.resize(k_chunk);
    const ssize_t n = ::pread(fd, out.data(), out.size(), t.offset);
    out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    t.offset += static_cast<off_t>(out.size());
  }
  ::close(fd);
  return out;
}

// The output files of s: StdOut, and StdErr when it is another file.
std::vector<std::string> output_files(const JobStatus& s) {
  std::vector<std::string> out;
  for (const auto& path : {s.std_out, s.std_err})
    if (!path.empty() && path != "/dev/null" && (out.empty() || out[0] != path))
      out.push_back(path);
  return out;
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
    // A final state is said once, by the final word.
    const auto files = output_files(now);
    if (tails_.size() != files.size() ||
        !std::equal(files.begin(), files.end(), tails_.begin(),
                    [](const std::string& f, const Tail& t) { return f == t.path; })) {
      tails_.clear();
      for (const auto& f : files) tails_.push_back(Tail{f});
    }
    std::string status = "job " + now.id + " " + now.state;
    if (!now.reason.empty()) status += " (" + now.reason + ")";
    if (!now.nodes.empty() && now.state != "PENDING") status += " on " + now.nodes;
    if (!now.elapsed.empty()) status += ", " + now.elapsed;
    if (now.restarts > 0) status += ", restart " + std::to_string(now.restarts);
    status += "  (Ctrl-C detaches)";
    display_.status(ddp::text::printable(status));
    // A final state is said once, by the final word.
    const bool final = is_final_state(now.state);
    for (const auto& line : job_changes(last_, now))
      if (!final || line != state_line(now)) display_.event(line, now.state);
    last_ = now;
    ran_ = ran_ || now.state != "PENDING";
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
    read_outputs();
    show_held();
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

  // Reads the output files; their new lines wait in held_ until show_held().
  void read_outputs() {
    for (auto& t : tails_) {
      std::vector<std::string> notes;
      const std::string chunk = read_more(t, notes);
      for (const auto& n : notes) say_note(n);
      for (auto& line : t.lines.feed(chunk)) held_.push_back(std::move(line));
    }
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
  std::vector<Tail> tails_;
  std::vector<std::string> held_;  // lines read, not shown yet
  bool ran_ = false;               // a look saw the job past PENDING
  bool looked_early_ = false;
  std::string last_verdict_;
  int failed_looks_ = 0;
};

// The job as scontrol knows it, else as sacct does; an error naming both when neither does.
Result<JobStatus> find_job(const std::string& id) {
  auto now = scontrol_job(id);
  if (!now) return std::unexpected(now.error());
  if (*now) return **now;
  auto acct = sacct_job(id);
  if (acct && *acct) return **acct;
  return ddp::fail(
      {"job " + id, 0, 0},
      "not known to scontrol (it forgets a job MinJobAge after its end) " +
          (acct ? std::string("nor to sacct") : "and sacct cannot say: " + acct.error().message));
}

// The last verdict line in the job's output files (their last MiB each), or "".
std::string last_verdict_in(const JobStatus& s) {
  std::string verdict;
  for (const auto& path : output_files(s)) {
    Tail t{path};
    std::vector<std::string> ignored;
    for (const auto& line : t.lines.feed(read_more(t, ignored)))
      if (classify_line(line) == LineKind::verdict) verdict = line;
  }
  return verdict;
}

}  // namespace

int follow_job(const std::string& id) {
  return Follower(id).run();
}

Result<void> print_job_status(const std::string& id) {
  auto s = find_job(id);
  if (!s) return std::unexpected(s.error());
  const auto row = [](const char* name, const std::string& value, const char* none = "-") {
    std::cout << "  " << name << std::string(10 - std::strlen(name), ' ')
              << (value.empty() ? none : ddp::text::printable(value)) << "\n";
  };
  std::cout << state_line(*s) << (s->from_accounting ? " (from sacct)" : "") << "\n";
  row("name", s->name);
  row("state", s->state);
  row("reason", s->reason);
  row("nodes", s->nodes);
  row("elapsed", s->elapsed);
  row("exit", s->exit_code);
  row("restarts", s->from_accounting ? "" : std::to_string(s->restarts), "unknown (sacct)");
  row("excluded", s->excluded, s->from_accounting ? "unknown (sacct)" : "-");
  const auto files = output_files(*s);
  row("output", ddp::text::join(files, ", "), "unknown (sacct does not say)");
  const std::string verdict = last_verdict_in(*s);
  row("verdict", verdict, files.empty() ? "unknown" : "none in the output");
  std::cout << std::flush;
  return {};
}

Result<void> print_job_output(const std::string& id) {
  auto s = scontrol_job(id);
  if (!s) return std::unexpected(s.error());
  if (!*s)
    return ddp::fail({"job " + id, 0, 0},
                     "not known to scontrol, which names its output file (it forgets a job "
                     "MinJobAge after its end); look in the job's directory (slurm-" +
                         id + ".out by default)");
  const auto files = output_files(**s);
  if (files.empty()) return ddp::fail({"job " + id, 0, 0}, "its output goes to /dev/null");
  auto text = read_file(files[0]);
  if (!text) {
    if ((*s)->state == "PENDING")
      return ddp::fail({"job " + id, 0, 0}, "PENDING: no output yet (it will be in " +
                                                ddp::text::quote(files[0], 200) + ")");
    return std::unexpected(text.error());
  }
  if (auto written = write_stdout(*text); !written) return written;
  if (files.size() > 1)
    std::cerr << "ddpgen: job " << id << "'s stderr is in " << ddp::text::printable(files[1])
              << "\n";
  return {};
}

}  // namespace ddpgen::app
