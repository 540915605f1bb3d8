// Run-time references in job values: "${NAME}" expands when the job runs, for the names a job
// may rely on (Slurm's job variables, USER, HOME, the job's env keys, the site's variables);
// every other byte, any other "$" included, arrives as written.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddpgen::refs {

// Slurm's job variables: the same in the batch shell and in every task of the job.
const std::vector<std::string>& slurm_job_variables();

// What launcher none exports in the batch shell before its command runs.
const std::vector<std::string>& batch_launch_variables();

// The variable a sweep parameter's value is exported as in each array task: SWEEP_<NAME>, the
// name's letters upper-cased ("lr" -> "SWEEP_LR").
std::string sweep_variable(std::string_view parameter);

// Returns why an env key may not be set by a job file or a profile, or nothing: the variables
// the generated script and its tasks rely on (Slurm's job and step variables, the rendezvous
// variables ddpgen or the plugin sets and torchrun's PET_* rendezvous options, the script's own
// DDP_* and ddpgen_* names, srun's SLURM_EXPORT_ENV, and bash's variables that change how the
// script runs). The message names the fix where there is one.
std::optional<std::string> reserved(std::string_view name);

// The end of the run-time reference that expands at text[at]: "${NAME}", or "${NAME:-TEXT}" whose
// TEXT is plain (letters, digits, spaces, _ - . / : = , + @ %), which bash takes literally inside
// double quotes; at itself when there is none ("$${" is the escape of a literal "${").
std::size_t expanding_end(std::string_view text, std::size_t at);

// Returns the names of text's ${NAME} references, in order (duplicates kept).
std::vector<std::string> names(std::string_view text);

// Returns why a reference of text cannot expand (a name not in allowed, with a did-you-mean;
// a variable that differs per task), or nothing. key names the value in the message.
std::optional<std::string> problem(std::string_view text, const std::vector<std::string>& allowed,
                                   const std::string& key);

// A path that starts with "~" or "~/" as one with "${HOME}" there, so that it expands as the
// shell would expand it unquoted; any other text as it is ("~user" stays as written).
std::string home_tilde(std::string_view path);

// Returns the names in allowed that text writes as "$NAME" without braces: they stay literal,
// which is rarely what a value such as "$SCRATCH/img.sif" means (a warning says so).
std::vector<std::string> unbraced(std::string_view text, const std::vector<std::string>& allowed);

// Returns the other names text writes as "$NAME": no variable the job is known to have, so
// they stay literal too ("$VER" in a module name; a warning says so).
std::vector<std::string> unbraced_unknown(std::string_view text,
                                          const std::vector<std::string>& allowed);

// Whether name is set in each task only (Slurm's SLURM_PROCID, ddpgen's RANK and MASTER_ADDR,
// ...): never in the batch shell or when ddpgen writes the script, but where a task_prefix runs.
bool set_in_each_task(std::string_view name);

// Returns text with its references replaced by the patterns sbatch expands in --output and
// --error (${SLURM_JOB_ID} -> %j, ${SLURM_ARRAY_TASK_ID} -> %a, ...), or why one has none:
// sbatch reads #SBATCH lines itself, before any shell runs.
std::optional<std::string> filename_pattern(std::string_view text, std::string* out);

// The other way, for a file the script opens itself (a sweep's output, named once the sweep's
// values are set): text with sbatch's patterns as run-time references (%j -> ${SLURM_JOB_ID},
// %A, %a, %x, %u; %% -> %), its references kept; or why one cannot name the file there. The
// references filename_pattern() takes can, and those in `also` (the sweep's SWEEP_<NAME>).
std::optional<std::string> script_filename(std::string_view text,
                                           const std::vector<std::string>& also,
                                           std::string* out);

}  // namespace ddpgen::refs
