// The watcher's decisions: when the step's output and the watched files are progress, when the
// silence is a stall (the startup allowance before the first progress, the timeout after), how
// the stacks are asked for, when the grace is over and the step is ended, and what ddp-watch
// does and returns once the command ended (the verdict and stacks file, the crash summary,
// --requeue-stalled, the hand-off to --heal). Pure: events, clock readings and what Slurm said
// come in as values; actions go out, and supervise.cpp carries them out.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddp-watch/activity.hpp"
#include "ddp-watch/options.hpp"
#include "ddp-watch/output.hpp"
#include "ddp-watch/report.hpp"
#include "ddp-watch/schedule.hpp"
#include "ddp-watch/step_output.hpp"
#include "libddp/util/suspect.hpp"

namespace ddp::watch {

// Exit status when the command could not be started (as a shell says for a missing program).
inline constexpr int k_exit_not_started = 127;
// After the command ended: how long its last output is read, and how long the stack helper's
// last notices are waited for.
inline constexpr std::chrono::seconds k_drain_after_end{3};
inline constexpr std::chrono::seconds k_helper_notices_wait{10};

// What the environment says about the job (read by the caller).
struct JobEnv {
  std::string job_id;         // SLURM_JOB_ID; "" outside a job
  std::string array_job_id;   // SLURM_ARRAY_JOB_ID
  std::string array_task_id;  // SLURM_ARRAY_TASK_ID
  std::string restart_count;  // SLURM_RESTART_COUNT
  bool labelio = false;       // SLURM_LABELIO is set: the labels are forwarded
  std::string run_tag;        // fresh for each run (valid_run_tag): given to a preflight step
  // SLURM_SPANK__SLURM_SPANK_OPTION_ddp_ddp: the --ddp of sbatch or salloc, which srun's steps
  // inherit; unset without one.
  std::optional<std::string> spank_ddp;
};

// Where bytes came from: the command's stdout or stderr, or the stack helper's.
enum class Stream { out, err, helper_out, helper_err };

// A file's modification time, as stat() gives it.
struct FileTime {
  long long sec = 0;
  long nsec = 0;
  bool operator==(const FileTime&) const = default;
};

// What the watcher must do after a tick.
enum class Act {
  none,
  probe,       // probe_request() with the job's running steps, run it, on_probe() its output
  ask_stacks,  // announce `message`, then stack_request() with the job's running steps
  kill,        // announce `message`, scancel --signal=KILL `steps`, SIGKILL the process group
  layout,      // layout_request() with the job's running steps, run it, on_layout() its output
};
struct Action {
  Act act = Act::none;
  std::string message;
  std::vector<std::string> steps;
};

// How the stacks are asked for, in order: the helper step (freeze every node, then dump one
// process at a time) when `helper` is set; else, or when it fails, scancel --signal=ABRT to
// `steps`; when no step could be signalled, SIGABRT to the command's process group.
struct StackRequest {
  struct Helper {
    std::vector<std::string> freeze;  // srun ... ddp-watch --freeze-step STEP: run to its end
    std::vector<std::string> dump;    // srun ... ddp-watch --dump-step STEP: started, read
    std::chrono::seconds deadline{};  // for the freeze
  };
  std::optional<Helper> helper;
  std::vector<std::string> steps;
};

// Said when the freeze failed and the steps are signalled instead.
inline constexpr std::string_view k_freeze_failed =
    "the helper step could not freeze the step in time: signalling the step instead";

// What follows the command's end, in order: the stacks file (when `stalled`), `announce`,
// the requeue (its message, then scontrol requeue `requeue_target` when it says so), the
// hand-off to healing; then ddp-watch exits with `code`.
struct Outcome {
  int code = 0;
  bool stalled = false;
  StallReport report;       // when stalled: the verdict and the stacks
  std::string stacks_path;  // when stalled: where the stacks go
  std::vector<std::string> announce;
  std::optional<RequeueDecision> requeue;
  std::string requeue_target;
  bool heal = false;         // hand the suspects to --heal
  bool heal_failed = false;  // the command failed or stalled
  std::vector<Suspect> heal_suspects;
};

// "stacks of 3 process(es): FILE", and what to do when it could not be written.
std::string stacks_message(std::size_t dumps, const std::string& path, bool written);

// How long after the freeze step's end every node's dump helper starts signalling, each with
// its node's processes found and stopped by then: twice what the freeze step took (`froze`),
// from 2 to 5 s, and at most a quarter of the grace, which still has to hold the dumps.
std::chrono::milliseconds dump_delay(std::chrono::milliseconds froze, long grace_s);

// The watcher of one command run.
class Supervisor {
 public:
  Supervisor(const Options& options, JobEnv env);

  // Before the start: why the command is not run (said, then k_exit_usage), if it is not.
  std::optional<Outcome> refusal() const;
  // The variables the command is started with.
  std::vector<std::string> command_env() const;
  // The files whose new modification time is progress: the heartbeat, srun's -o/-e files.
  const std::vector<std::string>& watched() const { return watched_; }
  // The job's steps that run before the command starts: not the command's.
  void steps_before(const std::vector<StepRow>& rows);
  // The command started at `now`; modification times seen before were the earlier run's.
  void started(Clock::time_point now);
  // The command could not be started: `error` said, k_exit_not_started.
  static Outcome start_failed(const std::string& error);

  // Bytes of `stream` read at `now`: every byte is progress (a progress bar ends its line only
  // when it is done). Returns what to write out.
  std::vector<Write> on_output(Clock::time_point now, Stream stream, std::string_view bytes);
  // The end of `stream`: its unfinished last line, handled.
  std::vector<Write> on_end(Stream stream);
  // The modification time of watched()[file] at `now`; a new one is progress.
  void on_file_time(Clock::time_point now, std::size_t file, FileTime time);
  // What is due at `now`: asking for the stacks once, then the kill once, then nothing.
  Action on_tick(Clock::time_point now);
  // After ask_stacks: how to ask, from the job's running steps (squeue) and this program's
  // path (for the helper step).
  StackRequest stack_request(const std::vector<StepRow>& running, const std::string& self);
  // After Act::probe: the helper step that reads what the command's step wrote on each node
  // (run to its end, within `deadline`), or nothing when the step is not known.
  struct ProbeRequest {
    std::vector<std::string> argv;
    std::chrono::seconds deadline{};
  };
  std::optional<ProbeRequest> probe_request(const std::vector<StepRow>& running,
                                            const std::string& self);
  // What the probe printed at `now` ("" when it failed or could not run). The first probe of a
  // silence is the baseline; the one when the stall falls due is compared with it, and a
  // process that wrote between them, no more than k_max_unseen bytes since its first count
  // after the last progress, holds the stall off (Schedule::activity). Returns a line to
  // announce, the first time only.
  std::optional<std::string> on_probe(Clock::time_point now, std::string_view output);
  // After Act::layout: `sattach --layout STEP` for the command's step (run to its end within
  // k_layout_deadline), or nothing when the step is not known yet. Asked once a task has
  // printed, for a step whose ranks follow its node list (layout.hpp), at most k_layout_tries
  // times, k_layout_retry apart, until an answer parses; for a preflight (ddp-check, whose
  // rank 0 is the first task of the first node: trust.hpp) from its start, up to
  // k_preflight_layout_tries times, k_preflight_layout_retry apart, since a failing check may
  // end within seconds and say nothing before.
  std::optional<std::vector<std::string>> layout_request(const std::vector<StepRow>& running,
                                                         Clock::time_point now);
  // What sattach printed ("" when it failed or could not run): each task's RANK, for the crash
  // summary, and the preflight's rank 0; a text that is no layout leaves task ids as ranks and
  // task 0 as the preflight's rank 0.
  void on_layout(std::string_view output);
  static constexpr std::chrono::seconds k_layout_deadline{10};
  static constexpr int k_layout_tries = 3;
  static constexpr std::chrono::seconds k_layout_retry{5};
  static constexpr int k_preflight_layout_tries = 10;
  static constexpr std::chrono::seconds k_preflight_layout_retry{1};
  // The command ended with exit status `code` (ddp::sys::exit_status of its wait status).
  Outcome on_exit(int code) const;

  bool is_stalled() const { return schedule_.is_stalled(); }

 private:
  std::vector<Write> lines(Stream stream, const std::vector<BufferedLine>& text);
  Outcome stall_outcome() const;

  Options options_;  // a copy: callers pass temporaries (tests) and per-step copies
  JobEnv env_;
  Schedule schedule_;
  StepOutput output_;
  LineBuffer buffers_[4];
  std::vector<std::string> watched_;
  std::vector<FileTime> times_;
  std::string refusal_;
  std::vector<std::string> before_;
  std::vector<StepRow> ours_;  // the command's steps, found when first needed
  void find_ours(const std::vector<StepRow>& running);
  bool probing() const;
  bool baseline_fresh() const;
  bool layout_due(Clock::time_point now) const;

  // Slurm's layout of the step (layout.hpp): whether its ranks follow the node list, whether a
  // layout was read, how many times it was asked for, and when it may be asked again.
  bool ranks_by_node_ = false;
  bool head_by_layout_ = false;  // a preflight: its rank 0's task comes from the layout
  bool layout_read_ = false;
  int layout_tries_ = 0;
  Clock::time_point layout_next_{};

  // The probes (activity.hpp): the last counts and when they were read, the first counts of
  // this silence (what its unseen writes are measured from); whether the probe of this due
  // stall found no write (the stall goes on); the progress time whose baseline probe failed
  // (not tried again before the next progress).
  std::optional<Activity> activity_;
  Activity seen_;  // each process's first count since the last output or file time
  Clock::time_point activity_at_{};
  bool comparing_ = false;
  bool no_writes_ = false;
  std::optional<Clock::time_point> baseline_failed_;
  bool said_activity_ = false;
};

}  // namespace ddp::watch
