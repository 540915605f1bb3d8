// The parts of plan() (gen/core/plan.cpp): the checks of a job's values, and the launch. Used
// by plan.cpp only; declared here so that each part is a file of its own.
#pragma once

#include <string>

#include "gen/core/plan.hpp"

namespace ddpgen::detail {

// Throws the error message at the job key key (its FILE:LINE:COL).
[[noreturn]] void reject(const Job& job, const std::string& key, const std::string& message);

// Checks the job's values that do not depend on the chosen partition; throws the first problem
// and returns the warnings.
std::vector<Error> check_job(const Job& job, const Profile& profile);

// The srun options, the container and the command of the training step (or, for launcher none,
// the command the batch shell runs).
void add_launch(Plan& plan, const Job& job, const Profile& profile, long tasks_per_node);

// A list of the job's words, the first one a path: run-time references expand, and a leading
// "~" is the home directory, as in the shell.
std::vector<Word> path_and_words(const std::vector<std::string>& list);

// The interpreter's words: the job's (as path_and_words), else the profile's as written.
std::vector<Word> python_words(const Job& job, const Profile& profile);

// logs and sweep (gen/core/plan_runs.cpp): their checks against the job's other values, and
// their part of the plan (the array directive, each task's values, the per-rank tee).
void check_runs(const Job& job);
void add_runs(Plan& plan, const Job& job, const Profile& profile);

// The names sweep's tasks export: SWEEP_<NAME>, in the parameters' order.
std::vector<std::string> sweep_variables(const Job& job);
// Whether value names one of the sweep's values (${SWEEP_<NAME>}).
bool names_sweep(const Job& job, const std::string& value);
// The #SBATCH --output (or --error) name of an output or error value: its references as
// sbatch's patterns; for a name with the sweep's values, "%x-%A_%a" + suffix in the
// directories before the first one a sweep value names.
std::string sbatch_file(const Job& job, const std::string& value, std::string_view suffix);

}  // namespace ddpgen::detail
