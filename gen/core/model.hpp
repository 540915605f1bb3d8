// The job file and site profile as plain values. Defaults live here, as member initialisers.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "libddp/util/result.hpp"
#include "libddp/util/rules.hpp"

namespace ddpgen {

// The project's one error vocabulary (contrib/libddp/util/result.hpp), used here unqualified.
using ddp::Error;
using ddp::Location;
using ddp::Result;

using EnvList = std::vector<std::pair<std::string, std::string>>;

enum class Launcher { torchrun, srun, accelerate, lightning, fairseq, none };

// Returns the job-file spelling of launcher.
const char* launcher_name(Launcher launcher);

// The container runtimes a profile may offer and a job may name.
const std::vector<std::string>& container_runtime_names();

struct Container {
  std::string image;
  std::string runtime;  // one of container_runtime_names(); empty: the profile's default
  std::vector<std::string> mounts;
  std::string workdir;  // the tasks' working directory inside the container; empty: the runtime's
};

// The software a job activates in the batch shell before training: a conda environment (a name
// or a path), a virtualenv directory, or a file to source.
struct Activate {
  enum class Kind { conda, venv, source };
  Kind kind = Kind::conda;
  std::string value;
};

struct Checkpoint {
  std::string dir;
  bool requeue = false;
  std::string signal = "USR1";
  long signal_time = 120;  // seconds before the time limit
  // Requeues of one job at most, whatever caused them (SLURM_RESTART_COUNT): a job that keeps
  // failing or keeps being preempted stops instead of looping.
  long max_restarts = 10;
  bool requeue_on_failure = false;  // a run that exits non-zero is requeued too
};

// ddp-watch around the training step (doc/ddp-watch.md); durations in seconds.
struct Watchdog {
  long timeout = 0;        // no progress for this long is a stall (required)
  long startup = 0;        // allowance before the first progress; 0: the timeout
  long grace = 20;         // time the ranks get to print their stacks
  bool heartbeat = false;  // export DDP_HEARTBEAT_FILE for the program to touch
  bool requeue = false;    // on_stall: requeue (within checkpoint.max_restarts) instead of failing
};

// heal: exclude the nodes a failed preflight or training step names and requeue the job
// (ddp-watch --heal), within max_requeues.
struct Heal {
  bool exclude = true;               // false: requeue as it is, without excluding the named nodes
  long max_requeues = 3;             // ddp-watch --heal-max
  std::optional<long> max_respawns;  // ddp-watch --respawn-max; empty: the job's spares
};

// preflight: ddp-check as a step before training, with the training step's layout.
struct Preflight {
  long timeout = 60;   // seconds: ddp-check --timeout, unless DDP_CHECK_TIMEOUT is set at run time
  bool pairs = false;  // ddp-check --pairs: bandwidth between the nodes; slow nodes are named
  std::optional<double> pairs_threshold;  // --pairs-threshold, in (0, 1); empty: ddp-check's 0.5
};

struct Mail {
  std::string user;  // empty: Slurm's default, the submitting user
  std::string type = "END,FAIL";
};

// logs: a file per rank, DIR/rank-R.log, beside the job's output (which keeps every line).
struct Logs {
  std::string dir;  // may hold run-time references
};

// sweep: one array task per combination of the parameters' values; task i's values are the
// i-th combination, the last parameter changing fastest.
struct Sweep {
  std::vector<std::pair<std::string, std::vector<std::string>>> parameters;  // in file order
  long parallel = 0;  // array tasks running at once (--array=...%K); 0: Slurm's limit
  // The number of combinations.
  long size() const;
  // The values of combination index (0 <= index < size()), one per parameter.
  std::vector<std::string> values(long index) const;
};

// One decoded job file. where[key path] says where each given value came from.
struct Job {
  std::string name;
  long nodes = 1;
  long spares = 0;  // nodes asked for beyond `nodes`, which replace a node that heal names
  std::optional<long> gpus_per_node;   // default: the chosen partition's GPUs per node
  std::optional<long> procs_per_node;  // default: gpus_per_node, or 1 when that is 0
  std::optional<long> cpus_per_task;   // Slurm's, per task; default: the profile's cpus_per_gpu
  long time = 0;                       // seconds; 0: the partition's default limit
  Launcher launcher = Launcher::torchrun;
  std::string script;
  std::vector<std::string> args;
  std::string account;
  std::string partition;
  std::string gpu_type;
  EnvList env;
  std::vector<std::string> modules;
  std::optional<Container> container;
  std::optional<Checkpoint> checkpoint;
  std::optional<Watchdog> watchdog;
  std::optional<Heal> heal;
  std::string output;
  std::string error;
  std::optional<Mail> mail;
  std::optional<Preflight> preflight;  // empty: no preflight
  std::string qos;
  std::string constraint;
  std::vector<std::string> sbatch;  // extra #SBATCH options, each "--option[=value]"
  std::vector<std::string> srun;    // extra options of the training step's srun
  std::optional<Activate> activate;
  std::vector<std::string> pre;          // shell lines for the batch shell, before training
  std::vector<std::string> post;         // shell lines after training, whatever its outcome
  std::vector<std::string> task_prefix;  // words before the program in every task
  std::vector<std::string> python;       // the interpreter and its options; empty: the profile's
  std::string accelerate_config;         // accelerate launch --config_file
  std::vector<std::string> accelerate_options;  // accelerate launch's own, after ddpgen's
  std::vector<std::string> torchrun_command;  // the launcher in torchrun's place; empty: torchrun
  std::vector<std::string> torchrun_options;  // torchrun's own options, before the script
  std::optional<Logs> logs;              // empty: the job's output only
  std::optional<Sweep> sweep;            // empty: one job, not an array

  std::string file;                       // the job file's name as given
  std::map<std::string, Location> where;  // key path -> where it was given
  // Where key was given, or the start of the job file when it was not.
  Location at(const std::string& key) const;
};

struct NodeSpec {
  long gpus = 0;
  std::string gpu_type;  // GRES type ("v100") and the name a job's gpu_type selects
  long cores = 0;
  long memory_gb = 0;
  long local_disk_gb = 0;
};

struct Partition {
  std::string name;  // the Slurm partition; several entries may share it (Ibex: constraints)
  std::string description;
  long min_nodes = 1;
  long max_nodes = 0;  // 0: no limit known
  long max_time = 0;   // seconds; 0: no limit known
  long min_gpus = 0;   // per job
  long max_gpus = 0;   // per job; 0: no limit known
  bool test = false;   // never chosen automatically
  std::string constraint;
  std::string qos;  // --qos when the job names none (a partition reached through its QOS)
  std::optional<NodeSpec> node;  // default: the profile's node
  std::vector<std::string> sbatch;
  bool site_chooses = false;  // no --partition line: the site picks it (by QOS, constraint)
};

struct Profile {
  std::string name;
  std::string description;
  std::string deprecated;  // non-empty: printed at the top of every script
  bool abstract = false;   // only for extends:, not listed as a cluster
  std::vector<std::string> notes;
  std::vector<std::string> sources;
  bool ddp_plugin = false;
  bool account_required = false;
  std::string account_hint = "<account>";
  std::string gpu_request = "gres";   // gres | gpus-per-node
  std::string gpu_vendor = "nvidia";  // nvidia | amd (apptainer --nv or --rocm)
  NodeSpec node;
  std::vector<Partition> partitions;
  long cpus_per_gpu = 0;    // 0: no --cpus-per-task
  long mem_per_gpu_gb = 0;  // 0: no --mem (memory is automatic or left to the site default)
  std::vector<std::string> sbatch;
  bool module_purge = false;
  std::vector<std::string> module_use;  // extra module directories ("module use DIR")
  std::vector<std::string> modules;
  EnvList env;
  std::vector<std::string> container_runtimes;  // first is the default
  std::vector<std::string> container_binds;
  std::vector<std::string> container_modules;
  std::string
      local_scratch;  // where node-local disk is ("$LOCAL_SCRATCH, --gres=nvme:<GB>"), a comment
  std::vector<std::string> python = {"python3"};  // the interpreter and its options
  // The network NCCL must use (ib, efa, cxi, socket); empty: NCCL picks. Pinned in the script so
  // that NCCL fails instead of falling back to sockets, and checked by the preflight.
  std::string fabric;
  // Variables the site sets in every job ($SCRATCH, ...), which a job's values may reference.
  std::vector<std::string> variables;
  // Where each value came from, for "ddpgen profile show": key path ("sbatch", "env.NAME",
  // "node.gpus") -> "FILE:LINE" of the value, or of each part of a list that grew by "add".
  std::map<std::string, std::string> origin;
  long port_first = ddp::k_default_port_range.first;
  long port_last = ddp::k_default_port_range.last;
};

}  // namespace ddpgen
