// ddp-watch's command line, parsed without touching the process.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "libddp/util/cli.hpp"
#include "libddp/util/result.hpp"

namespace ddp::watch {

// Exit status when the watcher ended a stalled step (as timeout(1) does).
inline constexpr int k_exit_stall = 124;
// Exit status for a bad command line.
inline constexpr int k_exit_usage = 2;

// Each field but the command has one row in option_table().
struct Options {
  long timeout_s = 0;        // no progress for this long is a stall (required)
  long startup_s = 0;        // allowance before the first sign of progress; 0 = timeout_s
  long grace_s = 20;         // time the tasks get to print their stacks before they are killed
  std::string stacks;        // file for the full stacks; "" = ddp-watch-JOBID.stacks here
  std::string heartbeat;     // optional file whose modification counts as progress
  long requeue_max = -1;     // after a stall, requeue while SLURM_RESTART_COUNT is below; -1 never
  std::string heal;          // --heal FILE: the record of earlier runs; "" = no healing
  long heal_max = 3;         // --heal-max N: requeues when healing
  bool heal_exclude = true;  // --heal-no-exclude: requeue, but on any nodes
  bool heal_defer = false;   // --heal-defer: keep the requeue in the record for --heal-requeue
  long spares = 0;           // --spares K: K nodes of the job wait; a named node is replaced
  long respawn_max = -1;     // --respawn-max M: respawns with --spares; -1 = the spares
  std::vector<std::string> respawn_check;  // --respawn-check "WORDS": the check before a respawn
  bool first_check = false;  // --first-check: the check on every node before the first step too
  long check_tasks_per_node = 0;  // --check-tasks-per-node N: the checks' tasks per node; 0 = 1
  long check_wrapper = 0;    // --check-wrapper N: the checks run under the program's first N words
  bool launchers = false;    // --launchers: the tasks are per-node launchers, whatever their name
  bool keep_labels = false;  // forward srun's "N: " task labels instead of removing them
  std::string dump_step;     // internal: on this node, dump the stacks of step JOB.STEP one by one
  std::string freeze_step;   // internal: on this node, stop (SIGSTOP) every process of JOB.STEP
  std::string probe_step;    // internal: on this node, print what the processes of JOB.STEP wrote
  // internal, with --dump-step: the wall-clock time (ms since the epoch) at which every node's
  // helper starts signalling, its processes found and stopped by then; 0: at once.
  long long dump_at_ms = 0;
  std::string heal_requeue;  // --heal-requeue FILE: carry out the requeue --heal-defer kept
  bool help = false;
  bool version = false;
  std::vector<std::string> command;
  friend bool operator==(const Options&, const Options&) = default;
};

// Every option: its value, its usage text and its field. ddpgen's tests parse the command
// lines it renders with it.
std::span<const cli::Option<Options>> option_table();

// Parses ddp-watch's arguments (without argv[0]); the command follows "--" or the first
// argument that is not an option.
Result<Options> parse_options(const std::vector<std::string>& args);

// Whether the command's tasks are per-node launchers, not ranks: the program (after srun's
// options) is torchrun (or torchrun_jsc, ft_launcher, `tune run`), `accelerate launch` or
// `python -m torch.distributed.run` (also behind env, exec or `bash -c`). An argument that
// merely ends in "torchrun" is not one. --launchers says so for any other name.
bool launches_per_node(const std::vector<std::string>& command);

// What to do after a stall with --requeue-stalled MAX: requeue, or why not (the message).
struct RequeueDecision {
  bool requeue = false;
  std::string message;
};
RequeueDecision decide_requeue(const std::string& job_id, const std::string& restart_count,
                               long max);

// The job to requeue: in a job array, ARRAYID_TASKID, this task alone. A task's own
// SLURM_JOB_ID can equal the array's id, and requeueing that requeues every task of the array.
std::string requeue_target(const std::string& job_id, const std::string& array_job_id,
                           const std::string& array_task_id);

// Where srun writes the step's output when told to write it to files (-o/--output,
// -e/--error): then it never reaches ddp-watch, and silence there is not a stall.
struct OutputFiles {
  std::vector<std::string> plain;      // names without a %-pattern: watched like the heartbeat
  std::vector<std::string> patterned;  // names ddp-watch cannot resolve (%t, %N, ... or -D)
};
OutputFiles srun_output_files(const std::vector<std::string>& command);

// Whether the command is srun itself (whose --label output ddp-watch reads and removes).
bool is_srun(const std::vector<std::string>& command);

// The command's `--ddp` or `--ddp=MODE` word, when it is srun with one among its options; "".
std::string ddp_option(const std::vector<std::string>& command);

// Where the program starts in an srun command: the first word after srun's options (and their
// values, `-N 3` as `-N3`) and a `--`; command.size() when there is none. 0 when the command
// is not srun.
std::size_t srun_program_at(const std::vector<std::string>& command);

// The words the checks of --respawn-check run under, between srun's options and the check's
// own: the first --check-wrapper words of the step's program (a per-task setup that exports
// what the plugin would), else the command's --ddp option.
std::vector<std::string> check_setup(const Options& options);

// The usage text.
std::string usage();

}  // namespace ddp::watch
