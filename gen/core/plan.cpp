#include "gen/core/plan.hpp"

#include <algorithm>

#include "gen/core/duration.hpp"
#include "gen/core/shell.hpp"

namespace ddpgen {
namespace {

const std::vector<std::string> k_mail_types = {
    "NONE",          "BEGIN",          "END",        "FAIL",       "REQUEUE",
    "ALL",           "INVALID_DEPEND", "STAGE_OUT",  "TIME_LIMIT", "TIME_LIMIT_90",
    "TIME_LIMIT_80", "TIME_LIMIT_50",  "ARRAY_TASKS"};

[[noreturn]] void reject(const Job& job, const std::string& key, const std::string& message) {
  throw Error{message, job.at(key)};
}

void check_sbatch_value(const Job& job, const std::string& key, const std::string& value) {
  if (auto problem = shell::sbatch_value_problem(value))
    reject(job, key, "\"" + key + "\" " + *problem + "; it is written into an #SBATCH line");
}

struct Problem {
  std::string key;
  std::string message;
};

std::string plural(long n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// Why job cannot run in partition p with gpn GPUs per node; empty when it can.
std::vector<Problem> misfit(const Job& job, const Partition& p, const NodeSpec& node, long gpn) {
  std::vector<Problem> out;
  const std::string name = "partition \"" + p.name + "\"";
  if (gpn > node.gpus)
    out.push_back({"gpus_per_node", "\"gpus_per_node\" is " + std::to_string(gpn) +
                                        ", but nodes of " + name + " have " +
                                        plural(node.gpus, "GPU")});
  if (p.max_nodes > 0 && job.nodes > p.max_nodes)
    out.push_back({"nodes", name + " allows at most " + plural(p.max_nodes, "node") +
                                " (max_nodes); the job asks for " + std::to_string(job.nodes)});
  if (job.nodes < p.min_nodes)
    out.push_back({"nodes", name + " needs at least " + plural(p.min_nodes, "node") +
                                " (min_nodes); the job asks for " + std::to_string(job.nodes)});
  if (p.max_time > 0 && job.time > p.max_time)
    out.push_back({"time", name + " allows at most " + duration::format(p.max_time) +
                               " (max_time); the job asks for " + duration::format(job.time)});
  const long total = gpn * job.nodes;
  const std::string asks =
      std::to_string(total) + " (" + plural(job.nodes, "node") + " x " + std::to_string(gpn) + ")";
  if (p.max_gpus > 0 && total > p.max_gpus)
    out.push_back({"gpus_per_node", name + " allows at most " + plural(p.max_gpus, "GPU") +
                                        " per job (max_gpus); the job asks for " + asks});
  if (total < p.min_gpus)
    out.push_back({"gpus_per_node", name + " needs at least " + plural(p.min_gpus, "GPU") +
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
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!job.partition.empty() && std::find(names.begin(), names.end(), job.partition) == names.end())
    reject(job, "partition",
           "profile \"" + profile.name + "\" has no partition \"" +
               shell::comment_safe(job.partition) + "\" (valid: " + joined(names) + ")");
  if (candidates.empty()) {
    std::vector<std::string> types;
    for (const auto& p : profile.partitions) {
      const auto& t = (p.node ? *p.node : profile.node).gpu_type;
      if (!t.empty() && std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
    }
    reject(job, "gpu_type",
           "no partition of profile \"" + profile.name + "\" has GPU type \"" +
               shell::comment_safe(job.gpu_type) + "\"" +
               (job.partition.empty() ? "" : " in partition \"" + job.partition + "\"") +
               " (valid: " + joined(types) + ")");
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
         "no partition of profile \"" + profile.name + "\" fits the job: " + all +
             (job.partition.empty() ? " (test partitions are used only when named)" : ""));
}

void check_mail(const Job& job) {
  if (!job.mail) return;
  check_sbatch_value(job, "mail", job.mail->user);
  std::size_t start = 0;
  const std::string& t = job.mail->type;
  while (true) {
    auto comma = t.find(',', start);
    std::string item = t.substr(start, comma == std::string::npos ? comma : comma - start);
    if (std::find(k_mail_types.begin(), k_mail_types.end(), item) == k_mail_types.end())
      reject(job, "mail",
             "\"mail.type\": unknown type \"" + shell::comment_safe(item) +
                 "\" (valid: comma-separated NONE, BEGIN, END, FAIL, REQUEUE, ALL, "
                 "TIME_LIMIT, TIME_LIMIT_90, ...)");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

void check_job_text(const Job& job, const Profile& profile) {
  if (job.account.empty() && profile.account_required)
    reject(job, "account",
           "profile \"" + profile.name + "\" requires an account: add \"account: " +
               shell::comment_safe(profile.account_hint) +
               "\" to the job file or pass --set account=" +
               shell::comment_safe(profile.account_hint));
  if (!job.account.empty()) check_sbatch_value(job, "account", job.account);
  if (!job.name.empty()) check_sbatch_value(job, "name", job.name);
  if (!job.output.empty()) check_sbatch_value(job, "output", job.output);
  if (!job.error.empty()) check_sbatch_value(job, "error", job.error);
  check_mail(job);
  if (job.script.starts_with("-"))
    reject(job, "script", "\"script\" must not start with '-' (it would be read as an option)");
  if (job.watchdog && job.watchdog->requeue && !(job.checkpoint && job.checkpoint->requeue))
    reject(job, "watchdog",
           "\"watchdog.on_stall: requeue\" needs \"checkpoint.requeue: true\": the restart cap "
           "(checkpoint.max_restarts) and the requeue of this task alone come from there");
  if (job.checkpoint && job.checkpoint->signal_time >= job.time)
    reject(job, "checkpoint",
           "\"checkpoint.signal_time\" (" + std::to_string(job.checkpoint->signal_time) +
               " s) must be shorter than the time limit (" + duration::format(job.time) + ")");
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

std::string container_runtime(const Job& job, const Profile& profile) {
  const auto& runtimes = profile.container_runtimes;
  if (runtimes.empty())
    reject(job, "container", "profile \"" + profile.name + "\" has no container runtime");
  const std::string& wanted =
      job.container->runtime.empty() ? runtimes.front() : job.container->runtime;
  if (std::find(runtimes.begin(), runtimes.end(), wanted) == runtimes.end()) {
    std::string valid;
    for (const auto& r : runtimes) valid += (valid.empty() ? "" : ", ") + r;
    reject(job, "container",
           "profile \"" + profile.name + "\" has no container runtime \"" + wanted +
               "\" (valid: " + valid + ")");
  }
  return wanted;
}

// The one way text reaches an #SBATCH line. sbatch reads these lines itself, up to the first
// command, so a value must be one plain token: the decoders refuse anything else where the
// value is written (with its file and line); this is the last check, for every source at once.
void add_directive(Plan& plan, const std::string& option, const std::string& value = "") {
  if (auto problem = shell::sbatch_value_problem(option + value))
    throw Error{"internal error: a value that " + *problem + " was not refused",
                {"#SBATCH " + shell::comment_safe(option), 0, 0}};
  plan.directives.push_back(option + value);
}

// --cpus-per-task, or nothing when the profile sets no cpus_per_gpu or the job has no GPUs.
std::optional<long> cpus_per_task(const Profile& profile, const Choice& c, long tasks_per_node) {
  const long gpn = c.gpus_per_node;
  if (profile.cpus_per_gpu <= 0 || gpn <= 0) return std::nullopt;
  // Never more cores than the node has for jobs (Ibex keeps 2 per node for its filesystem).
  long cpus = profile.cpus_per_gpu * gpn;
  if (c.node.cores > 0) cpus = std::min(cpus, c.node.cores);
  return std::max(1L, cpus / tasks_per_node);
}

void add_resources(Plan& plan, const Job& job, const Profile& profile, const Choice& c,
                   long tasks_per_node) {
  add_directive(plan, "--partition=", c.partition->name);
  if (!c.partition->constraint.empty())
    add_directive(plan, "--constraint=", c.partition->constraint);
  add_directive(plan, "--nodes=", std::to_string(job.nodes));
  add_directive(plan, "--ntasks-per-node=", std::to_string(tasks_per_node));
  plan.cpus_per_task = cpus_per_task(profile, c, tasks_per_node);
  if (plan.cpus_per_task)
    add_directive(plan, "--cpus-per-task=", std::to_string(*plan.cpus_per_task));
  const long gpn = c.gpus_per_node;
  if (profile.mem_per_gpu_gb > 0 && gpn > 0)
    add_directive(plan, "--mem=", std::to_string(profile.mem_per_gpu_gb * gpn) + "G");
  if (gpn > 0 && profile.gpu_request == "gpus-per-node")
    add_directive(plan, "--gpus-per-node=", std::to_string(gpn));
  else if (gpn > 0)
    add_directive(
        plan, "--gres=",
        "gpu:" + (c.node.gpu_type.empty() ? "" : c.node.gpu_type + ":") + std::to_string(gpn));
  add_directive(plan, "--time=", duration::format(job.time));
}

void add_directives(Plan& plan, const Job& job, const Profile& profile, const Choice& c,
                    long tasks_per_node) {
  if (!job.name.empty()) add_directive(plan, "--job-name=", job.name);
  if (!job.account.empty()) add_directive(plan, "--account=", job.account);
  add_resources(plan, job, profile, c, tasks_per_node);
  if (!job.output.empty()) add_directive(plan, "--output=", job.output);
  if (!job.error.empty()) add_directive(plan, "--error=", job.error);
  if (job.mail) {
    add_directive(plan, "--mail-user=", job.mail->user);
    add_directive(plan, "--mail-type=", job.mail->type);
  }
  if (plan.requeue) {
    // B: signals only the batch shell, whose trap tells the program through a file and then
    // requeues the job; the training processes are not signalled (NCCL has caught SIGUSR1
    // before: nccl#704).
    add_directive(plan, "--signal=",
                  "B:" + plan.requeue->signal + "@" + std::to_string(plan.requeue->signal_time));
    add_directive(plan, "--requeue");
    add_directive(plan, "--open-mode=", "append");
  }
  for (const auto& s : profile.sbatch) add_directive(plan, s);
  for (const auto& s : c.partition->sbatch) add_directive(plan, s);
}

// How long the script waits for the program to save and stop after the notice: most of the
// warning time, leaving 10 s (at least half of it) for Slurm to requeue before the limit.
long notice_grace(long signal_time) {
  return signal_time > 20 ? signal_time - 10 : std::max(1L, signal_time / 2);
}

void add_launch(Plan& plan, const Job& job, const Profile& profile, long tasks_per_node) {
  auto& s = plan.srun_words;
  if (plan.plugin) s.push_back({plan.torchrun_mode ? "--ddp=torchrun" : "--ddp", {}});
  s.push_back({"--ntasks-per-node=" + std::to_string(tasks_per_node), {}});
  // srun does not inherit --cpus-per-task from sbatch in Slurm 22.05 to 23.02: repeat it.
  if (plan.cpus_per_task)
    s.push_back({"--cpus-per-task=" + std::to_string(*plan.cpus_per_task), {}});
  // Not --kill-on-bad-exit for the preflight: every rank lives to print its own diagnosis,
  // and ddp-check bounds the step itself.
  if (plan.preflight) plan.preflight_words = s;
  s.push_back({"--kill-on-bad-exit=1", {}});
  if (job.container) {
    const std::string runtime = container_runtime(job, profile);
    std::vector<std::string> mounts = profile.container_binds;
    mounts.insert(mounts.end(), job.container->mounts.begin(), job.container->mounts.end());
    if (runtime == "pyxis") {
      s.push_back({"--container-image=", job.container->image});
      if (!mounts.empty()) {
        std::string joined;
        for (const auto& m : mounts) joined += (joined.empty() ? "" : ",") + m;
        s.push_back({"--container-mounts=", joined});
      }
    } else {
      auto& c = plan.container_words;
      c.push_back({runtime + " exec " + (profile.gpu_vendor == "amd" ? "--rocm" : "--nv"), {}});
      for (const auto& m : mounts) c.push_back({"--bind ", m});
      c.push_back({"", job.container->image});
    }
  }
  const std::string nproc = std::to_string(plan.procs_per_node);
  auto& cmd = plan.command_words;
  plan.wrapped = !plan.plugin || job.launcher == Launcher::accelerate;
  plan.wrapper_exec = "exec \"$@\"";
  switch (job.launcher) {
    case Launcher::torchrun:
      // The underscore spelling: torchrun before PyTorch 2.0 (Debian 12's 1.13) knows no
      // other, and later releases still accept it.
      cmd.push_back({"torchrun --nproc_per_node=" + nproc, {}});
      break;
    case Launcher::accelerate:
      // accelerate needs this node's rank on its command line: it must expand in the task.
      plan.wrapper_exec = std::string("exec accelerate launch") +
                          (plan.gpus_per_node > 0 ? " --multi_gpu" : "") +
                          " --num_machines=\"$NNODES\" --machine_rank=\"$NODE_RANK\""
                          " --main_process_ip=\"$MASTER_ADDR\" --main_process_port=\"$MASTER_PORT\""
                          " --num_processes=\"$WORLD_SIZE\" \"$@\"";
      break;
    case Launcher::srun:
    case Launcher::lightning:
      cmd.push_back({"", profile.python});
      break;
    case Launcher::fairseq:
      cmd.push_back({"fairseq-train", {}});
      break;
  }
  cmd.push_back({"", job.script});
  for (const auto& a : job.args) cmd.push_back({"", a});
}

Plan make_plan(const Job& job, const Profile& profile) {
  check_job_text(job, profile);
  Plan plan;
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
  plan.nodes = job.nodes;
  plan.gpus_per_node = c.gpus_per_node;
  plan.procs_per_node = job.procs_per_node.value_or(std::max(1L, c.gpus_per_node));
  check_procs(job, c.gpus_per_node, plan.procs_per_node);
  const long tasks_per_node = plan.torchrun_mode ? 1 : plan.procs_per_node;

  if (job.checkpoint) {
    const Checkpoint& ck = *job.checkpoint;
    plan.checkpoint_dir = ck.dir;
    if (ck.requeue)
      plan.requeue = Requeue{ck.signal, ck.signal_time, notice_grace(ck.signal_time),
                             ck.max_restarts, ck.requeue_on_failure};
  }
  add_directives(plan, job, profile, c, tasks_per_node);
  if (job.watchdog) plan.watchdog = job.watchdog;
  add_launch(plan, job, profile, tasks_per_node);

  plan.module_purge = profile.module_purge;
  plan.module_use = profile.module_use;
  plan.modules = profile.modules;
  if (job.container)
    plan.modules.insert(plan.modules.end(), profile.container_modules.begin(),
                        profile.container_modules.end());
  plan.modules.insert(plan.modules.end(), job.modules.begin(), job.modules.end());
  plan.site_env = profile.env;
  plan.job_env = job.env;
  return plan;
}

}  // namespace

Result<Plan> plan(const Job& job, const Profile& profile) {
  try {
    return make_plan(job, profile);
  } catch (const Error& error) {
    return std::unexpected(error);
  }
}

}  // namespace ddpgen
