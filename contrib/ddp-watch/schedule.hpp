// When the watcher acts: a stall when no progress came for the timeout (the startup allowance
// before the first), then the end of the step when the grace after the stack request is over.
// Pure: the caller passes the clock's readings in.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace ddp::watch {

using Clock = std::chrono::steady_clock;

// What the watcher must do now.
enum class Due { nothing, stall, kill };

class Schedule {
 public:
  Schedule(long timeout_s, long startup_s, long grace_s, Clock::time_point start);
  // Something came from the step (a byte of output, a new heartbeat): the stall clock restarts.
  void progress(Clock::time_point now);
  // The step's processes wrote, but nothing reached ddp-watch (activity.hpp): the stall clock
  // restarts, and the startup allowance, if still running, stays the limit.
  void activity(Clock::time_point now) { last_progress_ = now; }
  Clock::time_point last_progress() const { return last_progress_; }
  // What is due at `now`: a stall once, then the kill once, then nothing.
  Due due(Clock::time_point now) const;
  // The stall was acted on at `now`: the kill falls due after the grace.
  void stalled(Clock::time_point now);
  // The step was ended.
  void killed() { killed_ = true; }
  bool is_stalled() const { return stalled_; }
  bool has_progressed() const { return progressed_; }
  // The silence that made the stall, in seconds: the timeout, or the startup allowance.
  long limit_s() const { return progressed_ ? timeout_s_ : startup_s_; }
  // How long a helper step may take to start and freeze the step: half the grace, at least
  // 2 s and at most 30 s, so that the fallback still has time before the kill.
  std::chrono::seconds helper_deadline() const;

 private:
  long timeout_s_, startup_s_, grace_s_;
  Clock::time_point last_progress_, kill_at_{};
  bool progressed_ = false, stalled_ = false, killed_ = false;
};

// The announcement of a stall: "no progress for 20 s (no output, heartbeat unchanged): asking
// every task for its stack".
std::string stall_message(long seconds, bool heartbeat);

// The step ids (JOB.STEP) of `now` that were not running in `before`: the command's steps.
std::vector<std::string> new_steps(const std::vector<std::string>& before,
                                   const std::vector<std::string>& now);

// Step ids from `squeue --noheader --steps --format="%i %N"` output, as JOB.STEP with the job's
// own id (`job_id`, its SLURM_JOB_ID): in a job array squeue writes ARRAYJOB_TASK.STEP, which
// no process's SLURM_JOB_ID matches. The batch, extern and interactive steps are left out.
struct StepRow {
  std::string id;     // "12.0"
  std::string nodes;  // its hostlist, "node[01-03]"
};
std::vector<StepRow> parse_steps(const std::string& squeue_output, const std::string& job_id);

// The stacks file: --stacks, else ddp-watch-JOBID.stacks ("local" outside a job).
std::string stacks_path(const std::string& option, const std::string& job_id);

}  // namespace ddp::watch
