#include "ddp-watch/heal_run.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "ddp-watch/heal.hpp"
#include "ddp-watch/slurm.hpp"
#include "libddp/core/hostlist.hpp"
#include "libddp/util/text.hpp"

namespace ddp::watch {
namespace {

void say(const std::string& text) {
  std::string line = "ddp-watch: heal: " + text + "\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// The most bytes a record may have: a few lines per exclusion, k_max_excluded of them.
constexpr off_t k_max_record = 64 * 1024;

// The record of earlier runs. It is opened without following a link and without blocking (a
// FIFO planted there opens at once), and read only when it is a regular file of this user's,
// writable by nobody else, of at most k_max_record bytes; else, or when it is damaged, that
// is said and the run starts a new record.
HealRecord load_record(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) {
      say(path + ": " +
          (errno == ELOOP ? std::string("a symbolic link, not followed")
                          : std::string(std::strerror(errno))) +
          "; starting a new record");
    }
    return {};
  }
  struct stat st {};
  std::string why;
  if (fstat(fd, &st) != 0) {
    why = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = "not a regular file";
  } else if (st.st_uid != geteuid()) {
    why = "not this user's file";
  } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    why = "writable by others";
  } else if (st.st_size > k_max_record) {
    why = "larger than " + std::to_string(k_max_record) + " bytes";
  }
  std::string text;
  if (why.empty()) {
    char buf[4096];
    ssize_t n = 0;
    while (text.size() <= static_cast<std::size_t>(k_max_record) &&
           (n = read(fd, buf, sizeof buf)) > 0) {
      text.append(buf, static_cast<std::size_t>(n));
    }
    if (n < 0) why = std::strerror(errno);
    if (text.size() > static_cast<std::size_t>(k_max_record)) why = "grew while read";
  }
  close(fd);
  if (!why.empty()) {
    say(path + ": " + why + ", not read; starting a new record");
    return {};
  }
  auto record = parse_record(text);
  if (!record) {
    say(path + ": " + record.error().message + "; starting a new record");
    return {};
  }
  return *record;
}

// Written to a new file of a name nobody can guess (mkostemp: O_CREAT|O_EXCL, mode 0600)
// beside the record and renamed over it: a run killed half-way leaves the old record, and a
// link or FIFO planted at the record's name is replaced, never followed.
void save_record(const std::string& path, const HealRecord& record) {
  std::string tmp = path + ".XXXXXX";
  const int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    say("cannot create " + tmp + ": " + std::strerror(errno) +
        ": the next run will not know this one's exclusions");
    return;
  }
  const std::string text = format_record(record);
  bool ok = true;
  for (std::string_view rest = text; ok && !rest.empty();) {
    const ssize_t n = write(fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) rest.remove_prefix(static_cast<std::size_t>(n));
  }
  ok = fsync(fd) == 0 && ok;
  ok = close(fd) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    say("cannot write " + path + ": the next run will not know this one's exclusions");
    unlink(tmp.c_str());
  }
}

// The job ends here: its record goes (a later job with the same id starts afresh).
void remove_record(const std::string& path) {
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    say("cannot remove " + path + ": " + std::strerror(errno));
  }
}

// The nodes of the job's partitions, from Slurm (heal.hpp: partition_size).
PartitionSize job_partition_size() {
  const std::vector<std::string> names = partition_names(env_or("SLURM_JOB_PARTITION", ""));
  std::vector<std::string> shows;
  for (const std::string& name : names) {
    shows.push_back(capture({"scontrol", "show", "partition", "-o", name}));
  }
  return partition_size(names, shows);
}

// The number of nodes on the job's excluded list now.
std::size_t excluded_count(const std::string& job) {
  const std::string list = exclusion_field(capture({"scontrol", "show", "job", "-o", job}));
  if (list.empty() || list == "(null)") return 0;
  return Hostlist::count(list).value_or(0);
}

std::vector<std::string> job_nodes() {
  auto hosts = Hostlist::parse(env_or("SLURM_JOB_NODELIST", env_or("SLURM_NODELIST", "")));
  if (!hosts || hosts->size() > 100'000) return {};
  return hosts->expand();
}

// Requeues `job`, then widens its excluded list. Slurm takes ExcNodeList only from a job that
// is no longer running, which a requeued job is at once (COMPLETING, then PENDING): the
// update follows the requeue. Ending the job sends SIGTERM to every process of it, scontrol
// included, and SIGKILL KillWait seconds later: SIGTERM is ignored from here on (children
// inherit that), which leaves those seconds for the update.
bool requeue_without(const std::string& job, const std::vector<std::string>& exclude) {
  std::signal(SIGTERM, SIG_IGN);
  if (!run_command({"scontrol", "requeue", job})) {
    say("scontrol requeue " + job + " failed: the job ends here (is it requeueable?)");
    return false;
  }
  if (exclude.empty()) return true;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const std::string list =
        merged_exclusion(exclusion_field(capture({"scontrol", "show", "job", "-o", job})), exclude);
    if (run_command({"scontrol", "update", "JobId=" + job, "ExcNodeList=" + list})) {
      say("job " + job + " excludes " + list);
      return true;
    }
  }
  say("scontrol update JobId=" + job + " ExcNodeList=... failed 3 times: the next run may land " +
      "on the same nodes");
  return true;
}

// The job to requeue (an array's task alone), "" outside a job.
std::string this_job() {
  return requeue_target(env_or("SLURM_JOB_ID", ""), env_or("SLURM_ARRAY_JOB_ID", ""),
                        env_or("SLURM_ARRAY_TASK_ID", ""));
}

unsigned this_run() {
  return text::parse_uint<unsigned>(env_or("SLURM_RESTART_COUNT", "0")).value_or(0);
}

// The record earlier runs of `job` left; empty, said when there was one, when it is not theirs.
HealRecord earlier_runs(const std::string& path, const std::string& job, unsigned restarts) {
  HealRecord record = load_record(path);
  const std::string stale = stale_record(record, job, restarts);
  if (!stale.empty() && (!record.excluded.empty() || record.unblamed > 0)) {
    say(path + ": not this job's record (" + stale + "); starting a new one");
  }
  if (!stale.empty()) record = {};
  return record;
}

// The job ends here (it passed, or failed for good): nothing is left for a next run, and the
// last line names every node its runs excluded.
void end_job(const std::string& path, const HealRecord& record) {
  remove_record(path);
  say(excluded_summary(record));
}

}  // namespace

bool heal_after(const Options& options, bool failed, const std::vector<Suspect>& suspects) {
  const std::string job = this_job();
  RunOutcome outcome{failed, suspects, job_nodes(), 0, 0, 0, ""};
  outcome.restarts = this_run();
  HealRecord record = earlier_runs(options.heal, job, outcome.restarts);
  if (failed && job.empty()) outcome.partition_unknown = "not inside a Slurm job";
  if (failed && !job.empty()) {
    const PartitionSize size = job_partition_size();
    outcome.partition_nodes = size.nodes;
    outcome.partition_unknown = size.unknown;
    outcome.excluded_before = excluded_count(job);
  }
  const HealPolicy policy{options.heal_exclude, static_cast<unsigned>(options.heal_max)};
  HealDecision d = decide_heal(record, outcome, policy);
  d.record.job = job;
  d.record.written = outcome.restarts;
  for (const std::string& line : d.log) say(line);
  bool requeued = false;
  if (d.action == HealAction::requeue && job.empty()) {
    say("not requeued: not inside a Slurm job");
  } else if (d.action == HealAction::requeue && options.heal_defer) {
    // Kept for --heal-requeue: the job script's last lines run before the requeue ends it.
    d.record.requeue = true;
    d.record.requeue_exclude = d.exclude;
    save_record(options.heal, d.record);
    say("the requeue waits for the end of the job script (ddp-watch --heal-requeue)");
    requeued = true;
  } else if (d.action == HealAction::requeue) {
    save_record(options.heal, d.record);
    requeued = requeue_without(job, d.exclude);
  }
  if (!requeued && d.action != HealAction::requeue) {
    end_job(options.heal, d.record);
  } else {
    say(excluded_summary(d.record));
  }
  return requeued;
}

void heal_end(const Options& options) {
  end_job(options.heal, earlier_runs(options.heal, this_job(), this_run()));
}

int heal_requeue(const std::string& path) {
  const std::string job = this_job();
  const unsigned restarts = this_run();
  HealRecord record = load_record(path);
  // Only a requeue this very run kept: one an earlier run or job left is not carried out.
  if (!record.requeue || job.empty() || record.job != job || record.written != restarts) return 0;
  const std::vector<std::string> exclude = record.requeue_exclude;
  record.requeue = false;
  record.requeue_exclude.clear();
  save_record(path, record);
  return requeue_without(job, exclude) ? 0 : 1;
}

}  // namespace ddp::watch
