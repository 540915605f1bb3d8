// ddpgen's subcommands beyond rendering: the JSON Schema, and the ones that ask the live
// cluster (profile init, validate --live). main() parses the command line and calls these.
#pragma once

#include <string>

#include "gen/core/cluster.hpp"
#include "gen/core/model.hpp"
#include "gen/core/schema.hpp"

namespace ddpgen::app {

// Writes the JSON Schema of kind to stdout; with keys, the job key paths --set accepts instead
// (one per line, for shell completion).
Result<void> print_schema(SchemaKind kind, bool keys);

// Asks the Slurm cluster this process runs on (scontrol show partition|node, srun --help) for
// its partitions, nodes and whether --ddp is installed.
Result<ClusterFacts> read_live_cluster();

// Drafts a profile named name from the live cluster; writes it to output, or stdout when empty.
Result<void> profile_init(const std::string& name, const std::string& output);

// Prints where profile (called name) disagrees with the live cluster to stderr, and a summary;
// with conflicts_only, only the conflicts and the summary when there are any. Returns the number
// of conflicts.
Result<int> report_live(const Profile& profile, const std::string& name,
                        bool conflicts_only = false);

}  // namespace ddpgen::app
