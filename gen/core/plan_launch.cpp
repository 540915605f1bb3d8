// The launch of the training step: srun's options, the container, the per-task wrapper and the
// command; for launcher none, the command the batch shell runs once.
#include <algorithm>

#include "gen/core/plan_parts.hpp"
#include "gen/core/references.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen::detail {
namespace {

std::string container_runtime(const Job& job, const Profile& profile) {
  const auto& runtimes = profile.container_runtimes;
  if (runtimes.empty())
    reject(job, "container",
           "profile " + ddp::text::quote(profile.name) + " has no container runtime");
  const std::string& wanted =
      job.container->runtime.empty() ? runtimes.front() : job.container->runtime;
  if (std::find(runtimes.begin(), runtimes.end(), wanted) == runtimes.end())
    reject(job, "container",
           "profile " + ddp::text::quote(profile.name) + " has no container runtime " +
               ddp::text::quote(wanted) + " (valid: " + ddp::text::join(runtimes, ", ") + ")");
  return wanted;
}

// A word of user text whose run-time references expand.
Word expanding(std::string raw, const std::string& user) {
  return Word{std::move(raw), user, true};
}

// pyxis and CSCS's container engine are srun options; the others wrap the command.
void add_container(Plan& plan, const Job& job, const Profile& profile) {
  Container c = *job.container;
  const std::string runtime = container_runtime(job, profile);
  // The image and each mount's source are files on the host: "~/" is the home directory there,
  // as in the shell.
  c.image = refs::home_tilde(c.image);
  std::vector<std::string> mounts = profile.container_binds;
  mounts.insert(mounts.end(), c.mounts.begin(), c.mounts.end());
  for (auto& m : mounts) m = refs::home_tilde(m);
  auto& s = plan.srun_words;
  auto& w = plan.container_words;
  if (runtime == "edf") {
    if (!c.mounts.empty() || !c.workdir.empty())
      reject(job, "container",
             "runtime edf: mounts and the working directory are set in the environment "
             "definition file (mounts, workdir), not in the job file");
    s.push_back(expanding("--environment=", c.image));
    return;
  }
  if (runtime == "pyxis") {
    s.push_back(expanding("--container-image=", c.image));
    if (!mounts.empty())
      s.push_back(expanding("--container-mounts=", ddp::text::join(mounts, ",")));
    if (!c.workdir.empty()) s.push_back(expanding("--container-workdir=", c.workdir));
    return;
  }
  const bool gpus = plan.gpus_per_node > 0;
  if (runtime == "shifter") {
    w.push_back(expanding("shifter --image=", c.image));
    for (const auto& m : mounts) w.push_back(expanding("--volume=", m));
    if (!c.workdir.empty()) w.push_back(expanding("--workdir=", c.workdir));
    return;
  }
  if (runtime == "podman-hpc") {
    // The tasks' environment (the DDP variables above all) reaches the container only when
    // asked for; the rendezvous needs the host's network.
    w.push_back(
        {std::string("podman-hpc run --rm --net=host --env-host") + (gpus ? " --gpu" : ""), {}});
    for (const auto& m : mounts) w.push_back(expanding("--volume=", m));
    if (!c.workdir.empty()) w.push_back(expanding("--workdir=", c.workdir));
    w.push_back(expanding("", c.image));
    return;
  }
  // --nv/--rocm only with GPUs: on a node without the vendor's driver they print a warning per
  // task and bind nothing.
  const char* gpu_flag = !gpus ? "" : profile.gpu_vendor == "amd" ? " --rocm" : " --nv";
  w.push_back({runtime + " exec" + gpu_flag, {}});
  for (const auto& m : mounts) w.push_back(expanding("--bind ", m));
  if (!c.workdir.empty()) w.push_back(expanding("--pwd ", c.workdir));
  w.push_back(expanding("", c.image));
}

// accelerate launch with the job's layout: the number of processes is the step's nodes (NNODES,
// exported to the task by the plugin or the per-task setup from Slurm's own count, so an
// `sbatch --nodes` at submission is followed) times the processes per node, and the address and
// port are the ones exported to the task. On nodes without GPUs ACCELERATE_USE_CPU=true, or
// accelerate's own code looks for a GPU backend on every rank.
// accelerate hands torch.distributed.run its own --tee, default 0, over torchrun's PET_TEE: a
// PET_TEE in the task's environment (a profile's workaround for a torchrun that crashes on 0, a
// job's env) becomes accelerate's --tee, before the job's own options, which still win.
// task_prefix wraps accelerate launch itself, inside the wrapper: in front of `bash -c` it would
// get the wrapper's code as its arguments, and a published wrapper that ends in `exec $*` splits
// that code into words and runs the first, an assignment: the step ends at once, "successfully",
// without training. The prefix's words come first among the wrapper's arguments, their count
// before them, and run with accelerate's command line as plain words after them.
void set_accelerate(Plan& plan, const Job& job) {
  const long world = plan.nodes * plan.procs_per_node;
  const bool prefix = !plan.prefix_words.empty();
  plan.wrapper_exec = std::string(prefix ? "ddpgen_prefix=$1; shift; " : "") +
                      (plan.gpus_per_node == 0 ? "ACCELERATE_USE_CPU=true " : "") +
                      (prefix ? "exec \"${@:1:ddpgen_prefix}\" " : "exec ") +
                      "accelerate launch --num_machines=\"$NNODES\" "
                      "--machine_rank=\"$NODE_RANK\" --main_process_ip=\"$MASTER_ADDR\" "
                      "--main_process_port=\"$MASTER_PORT\" --num_processes=\"$((NNODES * " +
                      std::to_string(plan.procs_per_node) +
                      "))\" ${PET_TEE:+--tee=\"$PET_TEE\"} " +
                      (prefix ? "\"${@:ddpgen_prefix+1}\"" : "\"$@\"");
  if (prefix) {
    plan.wrapper_args.push_back({std::to_string(plan.prefix_words.size()), {}});
    plan.wrapper_args.insert(plan.wrapper_args.end(), plan.prefix_words.begin(),
                             plan.prefix_words.end());
    plan.prefix_words.clear();
    plan.accelerate_prefix = true;
    // ddp-watch finds accelerate launch at the start of the wrapper's code; behind the prefix it
    // is told by flag.
    plan.named_launcher = true;
  }
  // Without a config file, --multi_gpu selects accelerate's torch.distributed launcher, which
  // starts procs_per_node processes on CPU nodes as on GPU nodes (accelerate refuses it for one
  // process, which its simple launcher runs); a config file chooses for itself (FSDP,
  // DeepSpeed) and is not overridden.
  if (!job.accelerate_config.empty())
    plan.wrapper_args.push_back(expanding("--config_file=", refs::home_tilde(job.accelerate_config)));
  if (!job.accelerate_config.empty() && world > 1)
    plan.accelerate_config_check = refs::home_tilde(job.accelerate_config);
  else if (world > 1)
    plan.wrapper_args.push_back({"--multi_gpu", {}});
  for (const auto& o : job.accelerate_options) plan.wrapper_args.push_back(expanding("", o));
}

void add_command(Plan& plan, const Job& job, const Profile& profile) {
  const std::vector<Word> python = python_words(job, profile);
  auto& cmd = plan.command_words;
  plan.wrapped = !plan.plugin || job.launcher == Launcher::accelerate;
  plan.wrapper_exec = k_plain_exec;
  switch (job.launcher) {
    case Launcher::torchrun: {
      // The underscore spelling: torchrun before PyTorch 2.0 (Debian 12's 1.13) knows no
      // other, and later releases still accept it, as do the launchers built on its arguments.
      const std::string procs = "--nproc_per_node=" + std::to_string(plan.procs_per_node);
      if (!job.torchrun_command.empty()) {
        // torchrun.command: a launcher in torchrun's place (torchrun_jsc, tune run,
        // python -m torch.distributed.launch), which reads the same PET_* variables.
        const std::vector<Word> launcher = path_and_words(job.torchrun_command);
        cmd.insert(cmd.end(), launcher.begin(), launcher.end());
        cmd.push_back({procs, {}});
        plan.named_launcher = true;
      } else if (!job.python.empty()) {
        // A job's python runs torchrun as its module ("python3 -u -m torch.distributed.run").
        cmd.insert(cmd.end(), python.begin(), python.end());
        cmd.push_back({"-m torch.distributed.run " + procs, {}});
      } else {
        cmd.push_back({"torchrun " + procs, {}});
      }
      for (const auto& o : job.torchrun_options) cmd.push_back(expanding("", o));
      break;
    }
    case Launcher::accelerate:
      set_accelerate(plan, job);
      break;
    case Launcher::srun:
      cmd.insert(cmd.end(), python.begin(), python.end());
      break;
    case Launcher::lightning:
      // Lightning's SLURM environment takes its global rank from SLURM_PROCID and its address
      // from MASTER_ADDR. Slurm 26.05 numbers tasks in topology order when a topology plugin is
      // configured, so SLURM_PROCID 0 may run on another node than MASTER_ADDR (the list's
      // first); RANK, from --ddp or the setup, is numbered along the list. The training
      // process gets SLURM_PROCID=RANK (the same value under block distribution in list order).
      plan.wrapped = true;
      plan.wrapper_exec = "SLURM_PROCID=$RANK; exec \"$@\"";
      cmd.insert(cmd.end(), python.begin(), python.end());
      break;
    case Launcher::none:
      plan.wrapped = false;
      if (job.script.ends_with(".py"))
        cmd.insert(cmd.end(), python.begin(), python.end());
      break;
    case Launcher::fairseq:
      cmd.push_back({"fairseq-train", {}});
      break;
  }
  plan.script_word = cmd.size();
  cmd.push_back(expanding("", refs::home_tilde(job.script)));
  for (const auto& a : job.args) cmd.push_back(expanding("", a));
  // The batch script's own arguments (sbatch job.slurm --lr 3e-4) follow the job's, as words.
  cmd.push_back({"\"$@\"", {}});
}

}  // namespace

std::vector<Word> path_and_words(const std::vector<std::string>& list) {
  std::vector<Word> out;
  for (std::size_t i = 0; i < list.size(); ++i)
    out.push_back(expanding("", i == 0 ? refs::home_tilde(list[i]) : list[i]));
  return out;
}

std::vector<Word> python_words(const Job& job, const Profile& profile) {
  std::vector<Word> python = path_and_words(job.python);
  if (job.python.empty())
    for (const auto& word : profile.python) python.push_back({"", word});
  return python;
}

void add_launch(Plan& plan, const Job& job, const Profile& profile, long tasks_per_node) {
  plan.prefix_words = path_and_words(job.task_prefix);
  if (job.launcher == Launcher::none) {
    plan.batch_launch = true;
    add_command(plan, job, profile);
    return;
  }
  auto& s = plan.srun_words;
  if (plan.plugin) s.push_back({plan.torchrun_mode ? "--ddp=torchrun" : "--ddp", {}});
  s.push_back({"--ntasks-per-node=" + std::to_string(tasks_per_node), {}});
  // srun does not inherit --cpus-per-task from sbatch in Slurm 22.05 to 23.02: repeat it.
  if (plan.cpus_per_task)
    s.push_back({"--cpus-per-task=" + std::to_string(*plan.cpus_per_task), {}});
  // Not --kill-on-bad-exit for the preflight: every rank lives to print its own diagnosis,
  // and ddp-check bounds the step itself.
  if (plan.preflight) {
    plan.preflight_words = s;
    plan.preflight_tasks_per_node = tasks_per_node;
  }
  s.push_back({"--kill-on-bad-exit=1", {}});
  // spares: the training step takes `nodes` of the allocation; ddp-watch adds which. --ntasks
  // too: srun reads the batch shell's SLURM_NTASKS, the tasks of every node of the job.
  if (job.spares > 0) {
    s.push_back({"--nodes=" + std::to_string(job.nodes), {}});
    s.push_back({"--ntasks=" + std::to_string(job.nodes * tasks_per_node), {}});
  }
  for (const auto& option : job.srun)
    if (option != "--kill-on-bad-exit=1") s.push_back(expanding("", option));
  if (job.container) add_container(plan, job, profile);
  add_command(plan, job, profile);
}

}  // namespace ddpgen::detail
