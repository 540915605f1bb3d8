#include "gen/core/plan.hpp"

#include <algorithm>
#include <cctype>

#include "gen/core/duration.hpp"
#include "gen/core/options.hpp"
#include "gen/core/plan_parts.hpp"
#include "gen/core/references.hpp"
#include "gen/core/shell.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen {
namespace {

using detail::reject;

struct Problem {
  std::string key;
  std::string message;
};

// Why job cannot run in partition p with gpn GPUs per node; empty when it can.
std::vector<Problem> misfit(const Job& job, const Partition& p, const NodeSpec& node, long gpn) {
  std::vector<Problem> out;
  const std::string name = "partition " + ddp::text::quote(p.name);
  if (gpn > node.gpus)
    out.push_back({"gpus_per_node", "\"gpus_per_node\" is " + std::to_string(gpn) +
                                        ", but nodes of " + name + " have " +
                                        ddp::text::plural(node.gpus, "GPU")});
  if (p.max_nodes > 0 && job.nodes + job.spares > p.max_nodes)
    out.push_back({"nodes", name + " allows at most " + ddp::text::plural(p.max_nodes, "node") +
                                " (max_nodes); the job asks for " +
                                std::to_string(job.nodes + job.spares) +
                                (job.spares > 0 ? " (with its spares)" : "")});
  if (job.nodes < p.min_nodes)
    out.push_back({"nodes", name + " needs at least " + ddp::text::plural(p.min_nodes, "node") +
                                " (min_nodes); the job asks for " + std::to_string(job.nodes)});
  if (p.max_time > 0 && job.time > p.max_time)
    out.push_back({"time", name + " allows at most " + duration::format(p.max_time) +
                               " (max_time); the job asks for " + duration::format(job.time)});
  const long total = gpn * job.nodes;
  const std::string asks = std::to_string(total) + " (" + ddp::text::plural(job.nodes, "node") +
                           " x " + std::to_string(gpn) + ")";
  if (p.max_gpus > 0 && total > p.max_gpus)
    out.push_back({"gpus_per_node", name + " allows at most " +
                                        ddp::text::plural(p.max_gpus, "GPU") +
                                        " per job (max_gpus); the job asks for " + asks});
  if (total < p.min_gpus)
    out.push_back({"gpus_per_node", name + " needs at least " +
                                        ddp::text::plural(p.min_gpus, "GPU") +
                                        " per job (min_gpus); the job asks for " + asks});
  return out;
}

struct Choice {
  const Partition* partition = nullptr;
  NodeSpec node;
  long gpus_per_node = 0;
};

Choice choose_partition(const Job& job, const Profile& profile) {
  std::vector<const Partition*> candidates;
  std::vector<std::string> names;
  for (const auto& p : profile.partitions) {
    if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
    const NodeSpec& node = p.node ? *p.node : profile.node;
    if (!job.gpu_type.empty() && node.gpu_type != job.gpu_type) continue;
    if (job.partition.empty() ? !p.test : p.name == job.partition) candidates.push_back(&p);
  }
  if (!job.partition.empty() && std::find(names.begin(), names.end(), job.partition) == names.end())
    reject(job, "partition",
           "profile " + ddp::text::quote(profile.name) + " has no partition " +
               ddp::text::quote(job.partition) + " (valid: " + ddp::text::join(names, ", ") + ")");
  if (candidates.empty()) {
    std::vector<std::string> types;
    for (const auto& p : profile.partitions) {
      const auto& t = (p.node ? *p.node : profile.node).gpu_type;
      if (!t.empty() && std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
    }
    reject(job, "gpu_type",
           "no partition of profile " + ddp::text::quote(profile.name) + " has GPU type " +
               ddp::text::quote(job.gpu_type) +
               (job.partition.empty() ? "" : " in partition " + ddp::text::quote(job.partition)) +
               " (valid: " + ddp::text::join(types, ", ") + ")");
  }
  std::vector<Problem> first_problems;
  std::string all;
  for (const Partition* p : candidates) {
    const NodeSpec& node = p->node ? *p->node : profile.node;
    const long gpn = job.gpus_per_node.value_or(node.gpus);
    auto problems = misfit(job, *p, node, gpn);
    if (problems.empty()) return {p, node, gpn};
    if (first_problems.empty()) first_problems = problems;
    all += (all.empty() ? "" : "; ") + problems.front().message;
  }
  if (candidates.size() == 1)
    reject(job, first_problems.front().key, first_problems.front().message);
  reject(job, first_problems.front().key,
         "no partition of profile " + ddp::text::quote(profile.name) + " fits the job: " + all +
             (job.partition.empty() ? " (test partitions are used only when named)" : ""));
}

void check_procs(const Job& job, long gpn, long procs) {
  if (gpn > 0 && procs > gpn)
    reject(job, "procs_per_node",
           "\"procs_per_node\" (" + std::to_string(procs) + ") is more than gpus_per_node (" +
               std::to_string(gpn) + "): each process needs a GPU of its own");
  if (job.launcher == Launcher::lightning && gpn > 0 && procs != gpn)
    reject(job, "procs_per_node",
           "launcher lightning needs procs_per_node equal to gpus_per_node (" +
               std::to_string(gpn) +
               "): Lightning runs one Slurm task per GPU and checks the count");
}

// The one way text reaches an #SBATCH line. sbatch reads these lines itself, up to the first
// command, so a value must be one plain token: the decoders refuse anything else where the
// value is written (with its file and line); this is the last check, for every source at once.
void add_directive(Plan& plan, const std::string& option, const std::string& value = "") {
  if (auto problem = shell::sbatch_value_problem(option + value))
    throw Error{"internal error: a value that " + *problem + " was not refused",
                {"#SBATCH " + ddp::text::printable(option), 0, 0}};
  plan.directives.push_back(option + value);
}

// --cpus-per-task: the job's, else from the profile's cpus_per_gpu; nothing when neither says
// (a CPU job without the key).
std::optional<long> cpus_per_task(const Job& job, const Profile& profile, const Choice& c,
                                  long tasks_per_node) {
  if (job.cpus_per_task) {
    if (c.node.cores > 0 && *job.cpus_per_task * tasks_per_node > c.node.cores)
      reject(job, "cpus_per_task",
             "\"cpus_per_task\": " + std::to_string(*job.cpus_per_task) + " CPUs for each of " +
                 std::to_string(tasks_per_node) + " task(s) per node is more than the " +
                 std::to_string(c.node.cores) + " cores of partition " +
                 ddp::text::quote(c.partition->name) + "'s nodes");
    return job.cpus_per_task;
  }
  const long gpn = c.gpus_per_node;
  if (profile.cpus_per_gpu <= 0 || gpn <= 0) return std::nullopt;
  // Never more cores than the node has for jobs (Ibex keeps 2 per node for its filesystem).
  long cpus = profile.cpus_per_gpu * gpn;
  if (c.node.cores > 0) cpus = std::min(cpus, c.node.cores);
  return std::max(1L, cpus / tasks_per_node);
}

// The partition's constraint and the job's, both when there are two.
std::string constraint(const Job& job, const Partition& p) {
  if (p.constraint.empty() || job.constraint.empty())
    return p.constraint.empty() ? job.constraint : p.constraint;
  if (job.constraint.find('|') != std::string::npos || p.constraint.find('|') != std::string::npos)
    reject(job, "constraint",
           "\"constraint\" with '|' cannot be combined with the own constraint of partition " +
               ddp::text::quote(p.name) + ", " + ddp::text::quote(p.constraint) +
               "; name a partition without one");
  return p.constraint + "&" + job.constraint;
}

// The extra options of the job and the profile: a job's option replaces the profile's option of
// the same name; --gres items join ddpgen's --gres; a memory option replaces ddpgen's --mem.
struct Extra {
  std::vector<std::string> tokens;
  std::string gres;  // generic resources to add to ddpgen's --gres
  bool memory = false;
};

Extra extra_options(const Job& job, const Profile& profile, const Partition& p) {
  Extra out;
  auto add = [&](const std::string& token) {
    const std::string name = options::name(token);
    if (name == "--gres") {
      out.gres += (out.gres.empty() ? "" : ",") + token.substr(name.size() + 1);
      return;
    }
    if (name == "--mem" || name == "--mem-per-cpu" || name == "--mem-per-gpu") out.memory = true;
    std::erase_if(out.tokens, [&](const auto& t) { return options::name(t) == name; });
    out.tokens.push_back(token);
  };
  for (const auto& t : profile.sbatch) add(t);
  for (const auto& t : p.sbatch) add(t);
  for (const auto& t : job.sbatch) add(t);
  return out;
}

void add_resources(Plan& plan, const Job& job, const Profile& profile, const Choice& c,
                   long tasks_per_node, const Extra& extra) {
  if (!c.partition->site_chooses) add_directive(plan, "--partition=", c.partition->name);
  if (const std::string k = constraint(job, *c.partition); !k.empty())
    add_directive(plan, "--constraint=", k);
  // The job's QOS, else the partition entry's (a site whose GPU partitions are reached by QOS).
  if (const std::string& q = job.qos.empty() ? c.partition->qos : job.qos; !q.empty())
    add_directive(plan, "--qos=", q);
  add_directive(plan, "--nodes=", std::to_string(job.nodes + job.spares));
  add_directive(plan, "--ntasks-per-node=", std::to_string(tasks_per_node));
  plan.cpus_per_task = cpus_per_task(job, profile, c, tasks_per_node);
  if (plan.cpus_per_task)
    add_directive(plan, "--cpus-per-task=", std::to_string(*plan.cpus_per_task));
  const long gpn = c.gpus_per_node;
  if (profile.mem_per_gpu_gb > 0 && gpn > 0 && !extra.memory)
    add_directive(plan, "--mem=", std::to_string(profile.mem_per_gpu_gb * gpn) + "G");
  std::string gres = extra.gres;
  // --gpus-per-node takes the type as --gres does (TYPE:N); where the partition's constraint
  // selects the node type (Ibex), the constraint says it.
  const bool typed = !job.gpu_type.empty() && c.partition->constraint.empty();
  if (gpn > 0 && profile.gpu_request == "gpus-per-node")
    add_directive(plan, "--gpus-per-node=",
                  (typed ? c.node.gpu_type + ":" : std::string()) + std::to_string(gpn));
  else if (gpn > 0)
    gres = "gpu:" + (c.node.gpu_type.empty() ? "" : c.node.gpu_type + ":") + std::to_string(gpn) +
           (gres.empty() ? "" : "," + gres);
  if (!gres.empty()) add_directive(plan, "--gres=", gres);
  // Without a time, Slurm applies the partition's default limit (DefaultTime, else MaxTime).
  if (job.time > 0) add_directive(plan, "--time=", duration::format(job.time));
}

std::string upper(std::string text) {
  for (char& ch : text) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return text;
}

// spares: true for an extra --no-kill token that ddpgen's own --no-kill line already says. A
// job's --no-kill=off (or =no, or a value sbatch refuses) is refused; a site's gives way.
bool said_by_spares(const Job& job, const std::string& token) {
  const std::string opt = options::name(token);
  if (job.spares == 0 || opt != "--no-kill") return false;
  const bool same = token == opt || upper(token.substr(opt.size() + 1)) == "SET";
  if (!same && std::ranges::find(job.sbatch, token) != job.sbatch.end())
    reject(job, "sbatch",
           ddp::text::quote(token) +
               ": with \"spares\", ddpgen passes --no-kill (a failed node must not end the job, "
               "so that a spare can replace it); leave it out");
  return true;
}

void add_directives(Plan& plan, const Job& job, const Profile& profile, const Choice& c,
                    long tasks_per_node) {
  const Extra extra = extra_options(job, profile, *c.partition);
  if (!job.name.empty()) add_directive(plan, "--job-name=", job.name);
  if (!job.account.empty()) add_directive(plan, "--account=", job.account);
  add_resources(plan, job, profile, c, tasks_per_node, extra);
  if (!job.output.empty())
    add_directive(plan, "--output=", detail::sbatch_file(job, job.output, ".out"));
  if (!job.error.empty())
    add_directive(plan, "--error=", detail::sbatch_file(job, job.error, ".err"));
  if (job.mail) {
    if (!job.mail->user.empty()) add_directive(plan, "--mail-user=", job.mail->user);
    add_directive(plan, "--mail-type=", upper(job.mail->type));
  }
  if (plan.requeue) {
    // B: signals only the batch shell, whose trap tells the program through a file and then
    // requeues the job; the training processes are not signalled (NCCL has caught SIGUSR1
    // before: nccl#704). Lightning saves and requeues by itself when its processes get it.
    add_directive(plan, "--signal=",
                  (plan.requeue->to_processes ? "" : "B:") + plan.requeue->signal + "@" +
                      std::to_string(plan.requeue->signal_time));
  }
  const bool requeues = plan.requeue || job.heal;
  const std::string requeuer = plan.requeue ? "checkpoint.requeue" : "heal";
  if (requeues) {
    add_directive(plan, "--requeue");
    add_directive(plan, "--open-mode=", "append");
  }
  // Without it Slurm revokes the whole allocation when one of its nodes fails (sbatch(1),
  // --no-kill), and a node failure could never be replaced by a spare.
  if (job.spares > 0) add_directive(plan, "--no-kill");
  for (const auto& token : extra.tokens) {
    if (said_by_spares(job, token)) continue;
    // --signal, --requeue and --no-requeue are the job's or the site's own unless
    // checkpoint.requeue (which passes --signal) or heal (--requeue) says them: then a job's
    // contrary option is refused, a site's default gives way, and a job's --requeue is said once.
    const std::string opt = options::name(token);
    if ((opt == "--signal" && plan.requeue) ||
        ((opt == "--requeue" || opt == "--no-requeue") && requeues)) {
      const bool from_job = std::ranges::find(job.sbatch, token) != job.sbatch.end();
      if (from_job && opt == "--signal")
        reject(job, "sbatch",
               ddp::text::quote(token) +
                   ": checkpoint.requeue passes --signal: set \"checkpoint.signal\" and "
                   "\"checkpoint.signal_time\" instead");
      if (from_job && opt == "--no-requeue")
        reject(job, "sbatch",
               ddp::text::quote(token) + ": " + requeuer +
                   " requeues the job; leave --no-requeue out");
      continue;
    }
    if (requeues && opt == "--open-mode" && token != "--open-mode=append")
      reject(job, "sbatch",
             ddp::text::quote(token) + ": " + requeuer +
                 " needs --open-mode=append (a requeued run must not truncate the log of the "
                 "runs before it)");
    if (!(requeues && token == "--open-mode=append")) add_directive(plan, token);
  }
}

// How long the script waits for the program to save and stop after the notice: most of the
// warning time, leaving 10 s (at least half of it) for Slurm to requeue before the limit.
long notice_grace(long signal_time) {
  return signal_time > 20 ? signal_time - 10 : std::max(1L, signal_time / 2);
}

// The profile's env with NCCL's network pinned to its fabric, so that NCCL fails instead of
// falling back to TCP sockets (a factor of ten without an error: pytorch#111424,
// aws-ofi-nccl#715). A profile env that sets one of these differently is an error.
EnvList with_fabric(const Profile& profile) {
  EnvList env = profile.env;
  EnvList pins;
  if (profile.fabric == "ib") pins = {{"NCCL_NET", "IB"}};
  if (profile.fabric == "socket") pins = {{"NCCL_NET", "Socket"}};
  // aws-ofi-nccl: every release answers to "AWS Libfabric" (newer ones also to "Libfabric").
  if (profile.fabric == "efa") pins = {{"NCCL_NET", "AWS Libfabric"}, {"FI_PROVIDER", "efa"}};
  if (profile.fabric == "cxi") pins = {{"NCCL_NET", "AWS Libfabric"}, {"FI_PROVIDER", "cxi"}};
  for (const auto& [key, value] : pins) {
    const auto it =
        std::find_if(env.begin(), env.end(), [&](const auto& e) { return e.first == key; });
    if (it == env.end()) {
      env.emplace_back(key, value);
    } else if (it->second != value) {
      const auto at = profile.origin.find("env." + key);
      throw Error{"profile " + ddp::text::quote(profile.name) + ": env." + key + " " +
                      ddp::text::quote(it->second) + " contradicts fabric: " + profile.fabric +
                      ", which sets " + ddp::text::quote(value) + "; remove one",
                  {at == profile.origin.end() ? profile.name : at->second, 0, 0}};
    }
  }
  return env;
}

// The job's env in an order where each key is exported after the env keys its value refers to
// (`A: ${B}/x` before `B: y` would see B unset): the file's order otherwise. A key's reference
// to itself is the value it had before (sbatch exports the submitting shell's). Keys that refer
// to each other are refused.
EnvList ordered_env(const Job& job) {
  const EnvList& env = job.env;
  auto index_of = [&](const std::string& name) {
    for (std::size_t i = 0; i < env.size(); ++i)
      if (env[i].first == name) return i;
    return env.size();
  };
  EnvList out;
  std::vector<int> state(env.size(), 0);  // 0 new, 1 on the path, 2 placed
  std::vector<std::string> path;
  auto place = [&](auto& self, std::size_t i) -> void {
    if (state[i] == 2) return;
    if (state[i] == 1) {
      reject(job, "env",
             "env keys refer to each other (" + ddp::text::join(path, " -> ") + " -> " +
                 env[i].first + "): none of them has a value to start from");
    }
    state[i] = 1;
    path.push_back(env[i].first);
    for (const std::string& name : refs::names(env[i].second)) {
      const std::size_t j = index_of(name);
      if (j < env.size() && j != i) self(self, j);
    }
    path.pop_back();
    state[i] = 2;
    out.push_back(env[i]);
  };
  for (std::size_t i = 0; i < env.size(); ++i) place(place, i);
  return out;
}

// The site's modules, its container modules when the job has a container, then the job's.
void add_modules(Plan& plan, const Job& job, const Profile& profile) {
  plan.module_purge = profile.module_purge;
  plan.module_use = profile.module_use;
  plan.modules = profile.modules;
  if (job.container)
    plan.modules.insert(plan.modules.end(), profile.container_modules.begin(),
                        profile.container_modules.end());
  plan.modules.insert(plan.modules.end(), job.modules.begin(), job.modules.end());
  plan.job_modules = job.modules.size();
}

Plan make_plan(const Job& job, const Profile& profile) {
  // A sweep's rules first: they say why a reference cannot name its output.
  detail::check_runs(job);
  auto warnings = detail::check_job(job, profile);
  Plan plan;
  plan.warnings = std::move(warnings);
  plan.profile_name = profile.name;
  plan.profile_description = profile.description;
  plan.deprecated = profile.deprecated;
  plan.notes = profile.notes;
  plan.local_scratch = profile.local_scratch;
  plan.plugin = profile.ddp_plugin;
  plan.launcher = job.launcher;
  plan.torchrun_mode = job.launcher == Launcher::torchrun || job.launcher == Launcher::accelerate;
  plan.port_first = profile.port_first;
  plan.port_size = profile.port_last - profile.port_first + 1;
  plan.preflight = job.preflight;

  const Choice c = choose_partition(job, profile);
  plan.partition = c.partition->name;
  plan.partition_chosen = job.partition.empty();
  plan.site_chooses = c.partition->site_chooses;
  plan.nodes = job.nodes;
  plan.gpus_per_node = c.gpus_per_node;
  plan.procs_per_node = job.procs_per_node.value_or(std::max(1L, c.gpus_per_node));
  check_procs(job, c.gpus_per_node, plan.procs_per_node);
  const long tasks_per_node = plan.torchrun_mode ? 1 : plan.procs_per_node;
  plan.activate = job.activate;
  plan.pre = job.pre;
  plan.post = job.post;

  if (job.checkpoint) {
    const Checkpoint& ck = *job.checkpoint;
    plan.checkpoint_dir = refs::home_tilde(ck.dir);
    if (ck.requeue)
      plan.requeue = Requeue{ck.signal,       job.launcher == Launcher::lightning,
                             ck.signal_time,  notice_grace(ck.signal_time),
                             ck.max_restarts, ck.requeue_on_failure};
  }
  add_directives(plan, job, profile, c, tasks_per_node);
  if (job.watchdog) plan.watchdog = job.watchdog;
  plan.heal = job.heal;
  plan.spares = job.spares;
  plan.fabric = profile.fabric;
  detail::add_launch(plan, job, profile, tasks_per_node);
  detail::add_runs(plan, job, profile);
  if (!plan.sweep_tasks.empty())
    add_directive(plan, "--array=",
                  "0-" + std::to_string(plan.sweep_tasks.size() - 1) +
                      (plan.sweep_parallel > 0 ? "%" + std::to_string(plan.sweep_parallel) : ""));

  add_modules(plan, job, profile);
  plan.site_env = with_fabric(profile);
  plan.job_env = ordered_env(job);
  return plan;
}

}  // namespace

std::string task_setup_args(const Plan& plan) {
  return std::string(plan.torchrun_mode ? "torchrun " : "tasks ") +
         std::to_string(plan.procs_per_node) + " " + std::to_string(plan.port_first) + " " +
         std::to_string(plan.port_size);
}

Result<Plan> plan(const Job& job, const Profile& profile) {
  try {
    return make_plan(job, profile);
  } catch (const Error& error) {
    return std::unexpected(error);
  }
}

}  // namespace ddpgen
