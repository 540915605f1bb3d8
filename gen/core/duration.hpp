// Slurm time limits: parsing the formats sbatch accepts, and one canonical spelling.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ddpgen::duration {

// Parses a Slurm time limit in seconds: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM",
// "D-HH:MM:SS". Returns nothing when malformed or zero ("UNLIMITED" is not a job's time).
std::optional<long> parse(std::string_view text);

// Returns seconds as "HH:MM:SS", or "D-HH:MM:SS" from one day on.
std::string format(long seconds);

}  // namespace ddpgen::duration
