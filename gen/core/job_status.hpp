// A submitted job as Slurm's clients describe it (`scontrol show job --oneliner`, `sacct
// --parsable2`, `sbatch --parsable`), and what ddpgen's submit, status and logs --follow say
// about it: state changes, the lines of its output that carry a verdict, the final word. Pure:
// the clients are run by gen/app/slurm_jobs.cpp.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gen/core/model.hpp"

namespace ddpgen {

// One look at a job. Empty strings are what Slurm did not say (its "(null)", "None").
struct JobStatus {
  std::string id;    // JobId: "12"; "12_3" for a task of an array
  std::string name;  // JobName
  std::string
      state;  // "PENDING", "RUNNING", "COMPLETED", ... (sacct's "CANCELLED by 0": CANCELLED)
  std::string reason;            // "Priority", "Resources"; empty for None
  std::string nodes;             // NodeList: "node[01-03]"; empty while pending
  std::string elapsed;           // RunTime (scontrol) or Elapsed (sacct): "00:01:05"
  std::string exit_code;         // "0:0": the script's status, then the signal that ended it
  std::string excluded;          // ExcNodeList: nodes the job may not use (heal excludes there)
  std::string std_out;           // StdOut (scontrol only): the output file, patterns expanded
  std::string std_err;           // StdErr (scontrol only); the same file as std_out unless --error
  long restarts = 0;             // Restarts (scontrol only): times the job was requeued
  bool from_accounting = false;  // read from sacct, not scontrol
};

// The job of `scontrol show job --oneliner ID` output: the record whose JobId is id (an array's
// records list every task), else the first. An error when no record has a JobId.
Result<JobStatus> parse_scontrol_job(const std::string& text, const std::string& id);

// True when scontrol's words (stdout and stderr) say the job does not exist (any more): it left
// slurmctld's memory MinJobAge seconds after it ended, or never was.
bool scontrol_says_no_such_job(std::string_view words);

// The sacct fields ddpgen asks for (sacct -X -n -P -o ...), in the order parse_sacct_job reads.
inline constexpr const char* k_sacct_format = "JobID,JobName,State,ExitCode,Elapsed,NodeList";

// The job of `sacct -X -n -P -j ID -o k_sacct_format` output: the last line whose JobID is id
// (a requeued job's latest run), else the last line; nothing when sacct printed no line.
Result<std::optional<JobStatus>> parse_sacct_job(const std::string& text, const std::string& id);

// True for the states a job does not leave: COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
bool is_final_state(std::string_view state);

// "12" or "12_3"; an error naming the expected form otherwise, so that nothing else reaches
// Slurm's clients as a job id.
Result<std::string> check_job_id(std::string_view text);

// The job id in `sbatch --parsable` output ("12", or "12;cluster"), its stderr merged in (a
// warning line may come first); nothing when no line is an id.
std::optional<std::string> parse_sbatch_id(std::string_view out);

// "job 12: PENDING (Priority)", "job 12: RUNNING on node[01-03]": a job's state in one line.
std::string state_line(const JobStatus& s);

// The lines to print when a job changed from before (nothing: the first look) to now: its state
// or reason or nodes, a requeue, a change to its excluded nodes. Empty when nothing changed.
std::vector<std::string> job_changes(const std::optional<JobStatus>& before, const JobStatus& now);

// How a line of a job's output counts for someone watching it: plain output, a notice from
// ddp-watch or the script ddpgen rendered, or a verdict (ddp-watch's verdict, first failure and
// heal lines, ddpgen's preflight fault).
enum class LineKind { plain, notice, verdict };
LineKind classify_line(std::string_view line);

// Splits a growing file's bytes into lines: feed() returns the lines a chunk completes, rest()
// what is left of a last line without its newline.
class LineSplitter {
 public:
  std::vector<std::string> feed(std::string_view chunk);
  std::string rest();

 private:
  std::string partial_;
};

// How a followed job ended, said once: the line and ddpgen's exit status (0 only when the job
// COMPLETED; a job that failed with an exit code gives that code, one ended by a signal
// 128 + the signal, any other end 1).
struct FinalWord {
  std::string line;
  int exit_status = 1;
};

// The final word on s. last_verdict (may be empty) is repeated so that a reader of the end alone
// learns why. s may be a last look from before the job left scontrol, when sacct could not say
// (no accounting): then the line says its state is not known and what was last seen.
FinalWord final_word(const JobStatus& s, const std::string& last_verdict, bool state_known);

// Where `ddpgen submit JOB.yaml` writes the script when -o is not given: beside the job file,
// its .yaml/.yml extension replaced by .slurm ("runs/train.yaml" -> "runs/train.slurm").
std::string script_path_for(const std::string& job_file);

// What submit may do with the file already at the script's path: create it (none there), keep it
// (the same text), replace it (an earlier render by ddpgen of a job file with the same name), or
// refuse (anything else: a user's own script is never overwritten).
enum class ScriptWrite { create, keep, replace, refuse };
ScriptWrite script_write(const std::optional<std::string>& existing, const std::string& text,
                         const std::string& job_file);

// A sweep (a job array): its tasks as `scontrol show job --oneliner ARRAY_ID` lists them, one
// record per task that started and one for the tasks still pending together. tasks: the task
// indexes the record stands for, in order.
struct ArrayRecord {
  std::vector<long> tasks;
  JobStatus status;
};
std::vector<ArrayRecord> parse_array_records(const std::string& text);

// The values of each task of a sweep, from the comment lines "# sweep task N: VALUES" of the
// script ddpgen rendered: task index -> VALUES.
std::map<long, std::string> sweep_values_in_script(const std::string& script);

// The line a script with logs.dir writes into the job's output, and where its rank files are,
// from the last such line of output (nothing when there is none).
inline constexpr std::string_view k_rank_logs_line = "ddpgen: rank logs in ";
std::optional<std::string> rank_log_dir_in(std::string_view output);

}  // namespace ddpgen
