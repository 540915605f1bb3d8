#include "ddp-watch/dump_node.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string_view>
#include <thread>

#include "ddp-watch/activity.hpp"
#include "ddp-watch/dump_plan.hpp"
#include "libddp/sys/exec.hpp"
#include "libddp/util/text.hpp"

namespace ddp::watch {
namespace {

// The value of NAME in a NUL-separated environment block, or "".
std::string env_value(const std::string& environ, std::string_view name) {
  std::size_t at = 0;
  while (at < environ.size()) {
    std::size_t end = environ.find('\0', at);
    if (end == std::string::npos) end = environ.size();
    std::string_view entry(environ.data() + at, end - at);
    if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') {
      return std::string(entry.substr(name.size() + 1));
    }
    at = end + 1;
  }
  return "";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// State letter and parent from /proc/PID/stat ("pid (comm) S ppid ..."; comm may hold spaces).
std::optional<std::pair<char, pid_t>> stat_of(pid_t pid) {
  std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  std::size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 4 > stat.size()) return std::nullopt;
  const std::string_view rest = std::string_view(stat).substr(close + 4);
  const auto ppid = ddp::text::parse_int(rest.substr(0, rest.find(' ')));
  if (!ppid) return std::nullopt;
  return std::make_pair(stat[close + 2], static_cast<pid_t>(*ppid));
}

// Whether the process runs a Python interpreter (its executable's name starts with "python").
bool is_python(pid_t pid) {
  char buf[4096];
  const std::string link = "/proc/" + std::to_string(pid) + "/exe";
  ssize_t n = readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return false;
  std::string_view exe(buf, static_cast<std::size_t>(n));
  return exe.substr(exe.rfind('/') + 1).starts_with("python");
}

// Writes the marker into the process's own stderr when that is a pipe or socket (srun's or
// torchrun's), so the dump that follows in that stream is known to be this process's. A file
// is left alone: a second writer at offset 0 would overwrite it.
bool mark(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/2";
  int fd = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
  if (ok) {
    const std::string line = dump_marker(pid) + "\n";
    ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  }
  close(fd);
  return ok;
}

// The pids the step's slurmstepd on this node tracks (`scontrol listpids`), or nothing, said
// on stderr, when it does not answer.
std::optional<std::vector<pid_t>> tracked_pids(const std::string& job, const std::string& step,
                                               const char* node) {
  std::vector<std::string> argv{"scontrol", "listpids", job + "." + step};
  if (node != nullptr && *node != '\0') argv.emplace_back(node);
  ddp::sys::RunOptions options;
  options.deadline = std::chrono::seconds(10);
  options.merge_stderr = true;  // its messages are said below, with the command, or not at all
  options.max_output = 1 << 20;
  auto ran = ddp::sys::run(argv, options);
  // The step has ended here since the watcher asked (a probe as the step finishes): nothing to
  // signal, and nothing to say.
  if (ran && ran->status != 0 &&
      (ran->out.find(" does not exist on ") != std::string::npos ||
       ran->out.find("Unable to connect to slurmstepd") != std::string::npos)) {
    return std::vector<pid_t>{};
  }
  if (!ran || ran->status != 0) {
    const std::string why = ran ? "exit status " + std::to_string(ran->status) + ", " +
                                      ddp::text::printable(ran->out.substr(0, 200))
                                : ran.error().message;
    std::fprintf(stderr, "ddp-watch: %s: %s: no process of the step is signalled here\n",
                 ddp::text::join(argv, " ").c_str(), why.c_str());
    return std::nullopt;
  }
  return parse_listpids(ran->out, job, step);
}

// This node's processes of the step: those its slurmstepd tracks, never a process found by its
// environment alone (any process can set SLURM_JOB_ID; a second cluster on the machine has a job
// with the same id). Their environment then gives each its task and rank. SLURMD_NODENAME tells
// nodes apart where several share one process table (nodes emulated in namespaces, as in the
// test cluster).
std::vector<StepProcess> find_step(const std::string& job, const std::string& step) {
  std::vector<StepProcess> out;
  const char* node = std::getenv("SLURMD_NODENAME");
  auto tracked = tracked_pids(job, step, node);
  if (!tracked) return out;
  for (pid_t pid : *tracked) {
    if (pid == getpid()) continue;
    std::string env = slurp("/proc/" + std::to_string(pid) + "/environ");
    // slurmstepd's own processes carry no step environment and are never signalled.
    if (env_value(env, "SLURM_JOB_ID") != job || env_value(env, "SLURM_STEP_ID") != step ||
        (node != nullptr && env_value(env, "SLURMD_NODENAME") != node)) {
      continue;
    }
    auto st = stat_of(pid);
    if (!st || st->first == 'Z') continue;
    std::string task = env_value(env, "SLURM_PROCID"), rank = env_value(env, "RANK");
    StepProcess p;
    p.pid = pid;
    p.parent = st->second;
    p.task = ddp::text::parse_int(task).value_or(-1);
    p.rank = ddp::text::parse_int(rank).value_or(-1);
    p.node = env_value(env, "SLURMD_NODENAME");
    p.python = is_python(pid);
    out.push_back(std::move(p));
  }
  return out;
}

// Waits until `pid` has ended (gone, or a zombie whose parent is stopped), at most 5 s.
void wait_gone(pid_t pid) {
  for (int i = 0; i < 250; ++i) {
    auto st = stat_of(pid);
    if (!st || st->first == 'Z') return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// SIGSTOPs every process; true when one at least took the signal.
bool stop_all(const std::vector<StepProcess>& processes) {
  bool stopped = false;
  for (const StepProcess& p : processes) stopped = kill(p.pid, SIGSTOP) == 0 || stopped;
  return stopped;
}

// This node's processes of JOB.STEP, or nothing (with a message) when `step` is malformed.
std::optional<std::vector<StepProcess>> step_here(const char* option, const std::string& step) {
  std::size_t dot = step.find('.');
  if (dot == std::string::npos) {
    std::fprintf(stderr, "ddp-watch: %s=%s: expected JOB.STEP\n", option, step.c_str());
    return std::nullopt;
  }
  return find_step(step.substr(0, dot), step.substr(dot + 1));
}

}  // namespace

// Every process of the step stops at once, workers too: a worker left running would see its
// peers die one by one as they dump, leave its collective and print a stack of its error
// handling (or of the garbage collector) instead of the place it waited in.
int freeze_step_here(const std::string& step) {
  auto processes = step_here("--freeze-step", step);
  if (!processes) return 2;
  return stop_all(*processes) ? 0 : 1;
}

int probe_step_here(const std::string& step) {
  auto processes = step_here("--probe-step", step);
  if (!processes) return 2;
  int status = 1;
  for (const StepProcess& p : *processes) {
    // "wchar: N" of /proc/PID/io; unreadable (another user's, gone) is skipped.
    const std::string io = slurp("/proc/" + std::to_string(p.pid) + "/io");
    const std::size_t at = io.find("wchar: ");
    if (at == std::string::npos) continue;
    const std::string_view rest = std::string_view(io).substr(at + 7);
    auto wchar = ddp::text::parse_uint<unsigned long long>(rest.substr(0, rest.find('\n')));
    if (!wchar) continue;
    std::string node = p.node;
    if (node.empty()) {
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      node = host;
    }
    std::printf("%s\n", probe_line(node, p.pid, *wchar).c_str());
    status = 0;
  }
  std::fflush(stdout);
  return status;
}

namespace {

// Sleeps until `at_ms` (ms since the epoch), at most 10 s; at once when it has passed or is 0.
void wait_for(long long at_ms) {
  using namespace std::chrono;
  const auto now = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  if (at_ms <= now) return;
  std::this_thread::sleep_for(milliseconds(std::min<long long>(at_ms - now, 10'000)));
}

}  // namespace

int dump_step_here(const std::string& step, long long at_ms) {
  auto processes = step_here("--dump-step", step);
  if (!processes) return 2;
  DumpPlan plan = plan_dump(*processes);
  // Stopped already when the watcher's --freeze-step reached this node; if not, at least
  // this node's processes wait for their turn stopped. The ranks' children stay stopped: they
  // would dump into their rank's output at the same moment.
  stop_all(plan.stop);
  // Every node starts at the same moment: the first rank to dump dies, srun then ends the step,
  // and a node whose helper was still finding its processes (a slow scontrol on a loaded node)
  // would lose its ranks' stacks, the culprit's among them.
  wait_for(at_ms);
  int status = 1;  // until a process took the signal
  for (const StepProcess& p : plan.dump) {
    mark(p.pid);
    std::printf("%s\n", dump_notice(p).c_str());
    std::fflush(stdout);
    if (kill(p.pid, SIGABRT) == 0) status = 0;
    kill(p.pid, SIGCONT);
    wait_gone(p.pid);
  }
  return status;
}

}  // namespace ddp::watch
