#include "ddp-watch/heal_run.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
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

// The record of earlier runs; an unreadable or damaged one is said and started afresh.
HealRecord load_record(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream text;
  text << in.rdbuf();
  auto record = parse_record(text.str());
  if (!record) {
    say(path + ": " + record.error().message + "; starting a new record");
    return {};
  }
  return *record;
}

// Written beside and renamed over, so that a run killed half-way leaves the old record.
void save_record(const std::string& path, const HealRecord& record) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << format_record(record);
    if (!out.flush()) {
      say("cannot write " + tmp + ": the next run will not know this one's exclusions");
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) say("cannot rename " + tmp + " to " + path);
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

}  // namespace

bool heal_after(const Options& options, bool failed, const std::vector<Suspect>& suspects) {
  const std::string job =
      requeue_target(env_or("SLURM_JOB_ID", ""), env_or("SLURM_ARRAY_JOB_ID", ""),
                     env_or("SLURM_ARRAY_TASK_ID", ""));
  const HealRecord record = load_record(options.heal);
  RunOutcome outcome{failed, suspects, job_nodes(), 0};
  auto restarts = text::parse_uint<unsigned>(env_or("SLURM_RESTART_COUNT", "0"));
  outcome.restarts = restarts.value_or(0);
  const HealPolicy policy{options.heal_exclude, static_cast<unsigned>(options.heal_max)};
  HealDecision d = decide_heal(record, outcome, policy);
  for (const std::string& line : d.log) say(line);
  bool requeued = false;
  if (d.action == HealAction::requeue && job.empty()) {
    say("not requeued: not inside a Slurm job");
  } else if (d.action == HealAction::requeue) {
    save_record(options.heal, d.record);
    requeued = requeue_without(job, d.exclude);
  } else if (d.action == HealAction::fail) {
    save_record(options.heal, d.record);
  }
  say(excluded_summary(d.record));
  return requeued;
}

}  // namespace ddp::watch
