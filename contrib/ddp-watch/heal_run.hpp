// The edge of healing (ddp-watch --heal): reads and writes the record, asks Slurm for the
// job's nodes and excluded list, requeues and excludes. The decision is heal.hpp's.
#pragma once

#include <vector>

#include "ddp-watch/options.hpp"
#include "libddp/util/suspect.hpp"

namespace ddp::watch {

// After the watched command ended: decides from `suspects` whether to exclude nodes and
// requeue, acts, logs each step on stderr and ends with the nodes excluded across runs.
// `failed`: the command failed or stalled. Returns whether the job was requeued.
// With --heal-defer, a requeue is kept in the record instead (and counts as done here).
bool heal_after(const Options& options, bool failed, const std::vector<Suspect>& suspects);

// The job ends without a heal decision (respawn.hpp found the fault follows the job): logs
// the nodes excluded across runs and removes the record, as heal_after does when the job ends.
void heal_end(const Options& options);

// ddp-watch --heal-requeue FILE: carries out the requeue that --heal-defer kept in FILE during
// this run of the job; 0 when there was none or it was done, 1 when it failed.
int heal_requeue(const std::string& path);

}  // namespace ddp::watch
