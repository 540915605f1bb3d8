// What a live Slurm cluster says about itself (`scontrol show partition|node --oneliner`), as
// plain values; a draft profile from it; and where a profile disagrees with it. Pure: the
// commands are run by gen/app/live.cpp.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gen/core/model.hpp"

namespace ddpgen {

// The Key=Value words of one `scontrol ... --oneliner` record, by key. A word without '='
// continues the previous value, so values with spaces (OS=, JobName=, a path) stay whole, their
// runs of spaces read as one.
using SlurmFields = std::map<std::string, std::string>;
SlurmFields scontrol_fields(const std::string& line);

struct ClusterGres {
  std::string name;  // "gpu", "nvme"
  std::string type;  // "v100"; empty when untyped
  long count = 0;
};

struct ClusterNode {
  std::string name;
  long cpus = 0;
  long memory_mb = 0;
  long tmp_disk_mb = 0;
  std::vector<std::string> features;  // AvailableFeatures
  std::vector<ClusterGres> gres;
  std::vector<std::string> partitions;
  // GPUs of this node (gres "gpu"), and their type ("" when untyped or mixed).
  long gpus() const;
  std::string gpu_type() const;
};

struct ClusterPartition {
  std::string name;
  long min_nodes = 0;
  long max_nodes = 0;  // 0: UNLIMITED
  long max_time = 0;   // seconds; 0: UNLIMITED
  bool is_default = false;
};

struct ClusterFacts {
  std::vector<ClusterPartition> partitions;
  std::vector<ClusterNode> nodes;
  bool ddp_plugin = false;  // srun offers --ddp
  // The nodes of partition name.
  std::vector<const ClusterNode*> nodes_of(const std::string& name) const;
};

// Parses the output of `scontrol show partition --oneliner` and `scontrol show node
// --oneliner`; an error names the line that could not be read.
Result<ClusterFacts> parse_cluster(const std::string& partitions, const std::string& nodes);

// A draft site profile (YAML text) named name for the cluster: one partition entry per
// partition and node type, limits from Slurm, and comments for what Slurm cannot tell.
std::string draft_profile(const ClusterFacts& facts, const std::string& name);

// One difference between a profile and the cluster. A conflict makes jobs fail (the profile
// allows what Slurm refuses, or names what does not exist); a note is stricter or missing
// information and may be intended (a QOS limit Slurm's partition does not show).
struct LiveFinding {
  bool conflict = false;
  std::string where;  // "partitions[0] (gpu)"
  std::string message;
};

// Every place profile disagrees with facts, conflicts first, in profile order.
std::vector<LiveFinding> compare_with_cluster(const Profile& profile, const ClusterFacts& facts);

}  // namespace ddpgen
