// Extra sbatch and srun options from a job file or a profile: the one place that knows which
// options ddpgen computes itself and which key sets each, so that an extra option can never
// silently override a computed one (sbatch and srun use the last of two).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gen/core/yaml_strict.hpp"

namespace ddpgen::options {

// Where a list of extra options comes from; the rules and the advice differ slightly.
enum class Source { job_sbatch, profile_sbatch, job_srun };

// Returns the option's name: "--mem=0" -> "--mem".
std::string name(std::string_view token);

// Returns why token cannot be an extra option from source, as the rest of a sentence that
// starts with the token ("is not one --option[=value] token ...", ": ddpgen computes --nodes:
// set the job key \"nodes\" instead"), or nothing when it is accepted.
std::optional<std::string> problem(std::string_view token, Source source);

// Decodes the list at path: every item checked with problem(). A flow list whose item looks cut
// at a comma ("[--exclude=a,b]") gets the hint to quote the item, and an option apart from its
// value ("[--cpu-bind, none]") the hint to join them, when the joined token is accepted; else
// the message says why it would be refused too.
std::vector<std::string> decode(const StrictReader& r, const YAML::Node& node,
                                const std::string& path, Source source);

// True when a --gres value asks for GPUs ("gpu", "gpu:a100:4"), which gpus_per_node says.
bool gres_has_gpu(std::string_view value);

}  // namespace ddpgen::options
