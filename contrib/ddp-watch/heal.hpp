// Healing: from what preflight and the watchdog named, which nodes a job leaves behind when it
// is requeued, or why it is not requeued. Pure: the evidence, the record of earlier runs and
// the policy come in as values; the decision and the lines to log go out.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libddp/util/result.hpp"
#include "libddp/util/suspect.hpp"

namespace ddp::watch {

using ddp::Fault;
using ddp::Suspect;

// What the runs of a job so far left behind (the record file, one line per entry).
struct Exclusion {
  unsigned run = 0;  // SLURM_RESTART_COUNT of the run that named it
  Suspect suspect;
};
struct HealRecord {
  std::vector<Exclusion> excluded;
  unsigned unblamed = 0;  // runs that failed with no node to blame
  std::string job;        // the job that wrote it ("job\tID\tRUN" line; "" in none)
  unsigned written = 0;   // SLURM_RESTART_COUNT of the run that wrote it
  // A requeue decided but kept for later (--heal-defer), with the nodes to exclude
  // ("requeue\tNODE,NODE" line).
  bool requeue = false;
  std::vector<std::string> requeue_exclude;
};

// The record as text, and back; a line that is not a record's is an error naming it.
std::string format_record(const HealRecord& record);
Result<HealRecord> parse_record(std::string_view text);

// Why `record` is not this run's to read, or "" when it is: it must have been written by an
// earlier run of the same job. A first run (restarts 0) never has one: whatever is there is
// an earlier job's that had the same id. Slurm gives a requeued job a new SubmitTime, so the
// job id and the run count are what ties a record to its job.
std::string stale_record(const HealRecord& record, std::string_view job, unsigned restarts);

// The most nodes one job excludes across its runs, whatever the partition's size.
inline constexpr std::size_t k_max_excluded = 64;

// heal: {exclude, max_requeues} of the job file.
struct HealPolicy {
  bool exclude = true;
  unsigned max_requeues = 0;
};

// How this run ended.
struct RunOutcome {
  bool failed = false;              // the preflight or the training step failed or stalled
  std::vector<Suspect> suspects;    // every node named, duplicates allowed
  std::vector<std::string> nodes;   // the job's nodes in this run
  unsigned restarts = 0;            // SLURM_RESTART_COUNT
  std::size_t partition_nodes = 0;  // nodes in the job's partition (Slurm); 0: unknown
  std::size_t excluded_before = 0;  // nodes on the job's excluded list before this decision
  std::string partition_unknown;    // when partition_nodes is 0: why ("" when not asked)
};

enum class HealAction {
  done,     // nothing failed
  requeue,  // requeue, leaving out `exclude`
  fail,     // end the job: the cap, or a fault that is not a node's
};

struct HealDecision {
  HealAction action = HealAction::done;
  std::vector<std::string> exclude;  // nodes to add to the job's excluded list
  std::vector<std::string> log;      // one line per exclusion with its evidence, then the why
  HealRecord record;                 // the record for the next run
};

// Decides: nodes named and not every node of the run -> exclude them and requeue within the
// cap; nothing named, or every node, or a hang at the place it hung before on a node since
// excluded -> the fault follows the job: one plain retry, then fail saying so. Exclusions are
// capped: when the new ones would leave fewer nodes than the job's in its partition, when the
// partition's size is unknown (no room can be shown), or past k_max_excluded, the job fails
// with the list instead of pending for ever.
HealDecision decide_heal(const HealRecord& record, const RunOutcome& outcome,
                         const HealPolicy& policy);

// The nodes of the partitions a job was submitted to, or why they cannot be told.
struct PartitionSize {
  std::size_t nodes = 0;
  std::string unknown;  // "" when `nodes` is known
};

// The partitions of SLURM_JOB_PARTITION ("a,b" for a job submitted to several), each once.
std::vector<std::string> partition_names(std::string_view list);

// The size from `scontrol show partition -o NAME` of each of `names` (`shows[i]` for
// `names[i]`, "" when scontrol failed): the sum of their TotalNodes. A job submitted to several
// partitions runs in one of them, and the sum is the most nodes it could ever be given: an
// exclusion past it leaves the job pending in every one. Unknown when there is no partition
// or one's size cannot be read.
PartitionSize partition_size(const std::vector<std::string>& names,
                             const std::vector<std::string>& shows);

// The closing line: "excluded across runs: node03 (run 0, unreachable), ..." or "... none".
std::string excluded_summary(const HealRecord& record);

// The job's excluded list with `add` merged in, for scontrol update ExcNodeList= (Slurm 22.05
// and later refuse "ExcNodeList+="; the whole list is written). `current` is what scontrol
// show job printed: "(null)" or empty for none.
std::string merged_exclusion(std::string_view current, const std::vector<std::string>& add);

// The ExcNodeList= field of `scontrol show job -o` output ("" when absent).
std::string exclusion_field(std::string_view show_job);

}  // namespace ddp::watch
