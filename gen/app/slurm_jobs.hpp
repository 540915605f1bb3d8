// ddpgen's submit, status and logs: the Slurm clients they run (sbatch, scontrol, sacct, through
// the one runner with a deadline) and the commands themselves. The decisions are gen/core's
// (job_status.hpp); main() parses the command line and calls these.
#pragma once

#include <optional>
#include <string>

#include "gen/core/job_status.hpp"

namespace ddpgen::app {

// `scontrol show job --oneliner ID`: the job, or nothing when Slurm does not know it (any more);
// an error with scontrol's words when it cannot answer.
Result<std::optional<JobStatus>> scontrol_job(const std::string& id);

// `sacct -X -n -P -j ID`: the job's latest run, or nothing when sacct has no record; an error
// with sacct's words when it cannot answer (a cluster without accounting).
Result<std::optional<JobStatus>> sacct_job(const std::string& id);

// A sweep's tasks: `scontrol show job --oneliner ID`'s records of the array ID (empty when ID
// is no array), and the values each task got, from the script Slurm keeps
// (`scontrol write batch_script ID -`; empty when it cannot say).
Result<std::vector<ArrayRecord>> array_records(const std::string& id);
std::map<long, std::string> sweep_values(const std::string& id);

// `sbatch --parsable SCRIPT` from the current directory: the job id, or an error that carries
// sbatch's own words when it refuses the job. sbatch's warnings go to our stderr.
Result<std::string> sbatch(const std::string& script);

// Writes script for job_file to path (empty: script_path_for(job_file)) unless the same text is
// there already: never through a symlink, never over a file ddpgen did not render from a job file
// of that name. Returns the path written or kept.
Result<std::string> place_script(const std::string& script, const std::string& job_file,
                                 const std::string& path);

// What ddpgen submit was asked for, beside the rendered script.
struct SubmitOptions {
  std::string profile;  // as given: NAME or PATH
  std::string job_file;
  std::string output;     // where the script goes; empty: script_path_for(job_file)
  bool live = true;       // compare the profile with the cluster first (validate --live)
  bool parsable = false;  // the job id alone on stdout
  bool follow = false;
};

// ddpgen submit: the live checks where Slurm answers, the script written (place_script), sbatch;
// prints the job id and follows the job when asked. Returns ddpgen's exit status.
int submit(const std::string& script, const SubmitOptions& options);

// ddpgen logs JOBID --follow, and submit --follow: the job's state changes, its output as it
// grows, its verdict lines, until it ends or SIGINT detaches (the job goes on). Returns the exit
// status: 0 only when the job COMPLETED (final_word()), 130 after a detach.
int follow_job(const std::string& id);

// ddpgen status JOBID: state, reason, nodes, elapsed, restarts, excluded nodes, the output file
// and the last verdict line in it, on stdout.
Result<void> print_job_status(const std::string& id);

// ddpgen logs JOBID: the job's output file as it is now, on stdout.
Result<void> print_job_output(const std::string& id);

// ddpgen logs JOBID --rank R: rank R's file of a job with logs.dir (DIR/rank-R.log, DIR as the
// job's output names it), on stdout.
Result<void> print_rank_log(const std::string& id, long rank);

}  // namespace ddpgen::app
