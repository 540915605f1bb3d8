// slurmstepd's side of --ddp: gathers Slurm's and this node's facts, asks the core for the
// decision (or the refusal), and applies it. Data flows one way: facts in, decision out, setenv.
#include <dlfcn.h>
#include <slurm/slurm.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "libddp/core/address.hpp"
#include "libddp/core/environment.hpp"
#include "libddp/core/hostlist.hpp"
#include "libddp/core/step.hpp"
#include "libddp/core/tuning.hpp"
#include "libddp/sys/system.hpp"
#include "spank/plugin_state.hpp"

namespace ddp {
namespace {

// A variable of the job's environment, whatever its length (node lists can be long).
std::optional<std::string> job_env(spank_t sp, const char* name) {
  std::string buffer(4096, '\0');
  for (int attempt = 0; attempt < 12; ++attempt) {
    spank_err_t rc = spank_getenv(sp, name, buffer.data(), static_cast<int>(buffer.size()));
    if (rc == ESPANK_SUCCESS) {
      buffer.resize(buffer.find('\0'));
      return buffer;
    }
    if (rc != ESPANK_NOSPACE) return std::nullopt;
    buffer.assign(buffer.size() * 4, '\0');
  }
  return std::nullopt;
}

std::optional<std::string_view> view(const std::optional<std::string>& value) {
  if (!value) return std::nullopt;
  return std::string_view(*value);
}

template <class T>
Result<T> item(spank_t sp, spank_item_t which, const char* what) {
  T value{};
  if (spank_get_item(sp, which, &value) != ESPANK_SUCCESS) {
    return fail(std::string("Slurm did not provide ") + what);
  }
  return value;
}

bool is_special_step(std::uint32_t step_id) {
  return step_id == SLURM_BATCH_SCRIPT || step_id == SLURM_EXTERN_CONT ||
         step_id == SLURM_INTERACTIVE_STEP || step_id == SLURM_PENDING_STEP;
}

// A libslurm function of the host process, looked up at run time so that the plugin loads in
// any process that reads plugstack.conf, and a release without it only loses that feature.
template <class Fn>
Fn slurm_symbol(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_DEFAULT, name));
}

// NodeAddr of `node` as slurmstepd read slurm.conf. These are libslurm internals (exported by
// libslurmfull, stable from Slurm 22.05 to 24.11): NodeName -> NodeHostname -> NodeAddr.
std::optional<std::string> slurm_node_addr(const std::string& node) {
  using Lookup = char* (*)(const char*);
  using Free = void (*)(void*);
  auto hostname_of = slurm_symbol<Lookup>("slurm_conf_get_hostname");
  auto addr_of = slurm_symbol<Lookup>("slurm_conf_get_nodeaddr");
  auto release = slurm_symbol<Free>("slurm_xfree_ptr");
  if (!hostname_of || !addr_of || !release) return std::nullopt;
  char* hostname = hostname_of(node.c_str());
  char* address = addr_of(hostname ? hostname : node.c_str());
  std::optional<std::string> out;
  if (address) out = address;
  release(hostname);
  release(address);
  return out;
}

// What this node learns about the head: the resolver's answer and, when the resolver does not
// know the name, Slurm's own address for it (SLURM_NODE_ALIASES, else NodeAddr).
HeadFacts gather_head(spank_t sp, const Config& config, const std::string& head) {
  HeadFacts facts;
  facts.head = head;
  facts.lookup_name = rewrite_host(head, config.address);
  if (config.address.mode == AddrMode::hostname) return facts;
  sys::Resolution resolution = sys::resolve_host(facts.lookup_name, config.resolve_timeout);
  facts.resolved = std::move(resolution.addresses);
  facts.resolve_error = std::move(resolution.error);
  facts.name_unknown = resolution.unknown;
  if (!facts.name_unknown) return facts;
  // Cloud and power-saving nodes: Slurm tells steps their addresses (Slurm 22.05+).
  if (auto aliases = job_env(sp, "SLURM_NODE_ALIASES")) {
    if (auto address = alias_address(*aliases, head)) {
      facts.slurm_address = std::move(address);
      facts.slurm_origin = "SLURM_NODE_ALIASES";
      return facts;
    }
  }
  if (auto address = slurm_node_addr(head); address && *address != head) {
    facts.slurm_address = std::move(address);
    facts.slurm_origin = "NodeAddr in slurm.conf";
  }
  return facts;
}

// On the node of RANK 0: its own addresses and a test bind of MASTER_PORT, judged by the core.
Result<void> check_this_rank0_node(const StepPlan& plan, const Config& config) {
  if (!config.check_addr && !config.check_port) return {};
  std::vector<IpAddress> resolved;
  if (!IpAddress::parse(plan.master_addr)) {
    sys::Resolution resolution = sys::resolve_host(plan.master_addr, config.resolve_timeout);
    if (resolution.error) return fail(*resolution.error);
    resolved = std::move(resolution.addresses);
  }
  auto targets = rank0_targets(plan.master_addr, resolved);
  if (!targets) return fail(targets.error().message);
  Rank0Facts facts;
  facts.targets = std::move(*targets);
  facts.own = sys::local_addresses();
  for (const IpAddress& target : facts.targets) {
    if (!config.check_port) break;
    if (auto bound = sys::test_bind(target, plan.master_port); !bound) {
      facts.bind_error = bound.error().message;
      break;
    }
  }
  return check_rank0_node(plan, facts, config.check_addr, config.check_port);
}

// Slurm's facts about this node's share of the step; `nodelist` must outlive the result.
Result<NodeInputs> gather_inputs(spank_t sp, Mode mode, std::vector<std::string>& keep) {
  NodeInputs in;
  in.mode = mode;
  auto job_id = item<std::uint32_t>(sp, S_JOB_ID, "the job id");
  auto step_id = item<std::uint32_t>(sp, S_JOB_STEPID, "the step id");
  auto node_id = item<std::uint32_t>(sp, S_JOB_NODEID, "the node id");
  auto ntasks = item<std::uint32_t>(sp, S_JOB_TOTAL_TASK_COUNT, "the task count");
  auto local_ntasks = item<std::uint32_t>(sp, S_JOB_LOCAL_TASK_COUNT, "the local task count");
  for (const auto* r : {&job_id, &step_id, &node_id, &ntasks, &local_ntasks}) {
    if (!*r) return fail(r->error().message);
  }
  in.job_id = *job_id;
  in.step_id = *step_id;
  in.node_id = *node_id;
  in.ntasks = *ntasks;
  in.local_ntasks = *local_ntasks;
  // Every value below is a view into `keep`, which the caller holds while it uses `in`.
  const char* names[] = {"SLURM_STEP_NODELIST",   "SLURM_STEP_TASKS_PER_NODE", "DDP_MASTER_PORT",
                         "SLURM_STEP_RESV_PORTS", "DDP_NPROC_PER_NODE",        "SLURM_GPUS_ON_NODE",
                         "CUDA_VISIBLE_DEVICES"};
  std::optional<std::string_view> values[std::size(names)];
  keep.reserve(std::size(names));
  for (std::size_t i = 0; i < std::size(names); ++i) {
    if (auto value = job_env(sp, names[i])) values[i] = keep.emplace_back(std::move(*value));
  }
  if (!values[0]) return fail("SLURM_STEP_NODELIST is not set in this step");
  in.step_nodelist = *values[0];
  in.tasks_per_node = values[1].value_or(std::string_view());
  in.user_port = values[2];
  in.reserved_ports = values[3];
  in.nproc_override = values[4];
  in.gpus_on_node = values[5];
  in.cuda_visible = values[6];
  return in;
}

Refusal everywhere(std::string message) {
  return Refusal{std::move(message), true};
}
Refusal here(std::string message) {
  return Refusal{std::move(message), false};
}

// The global task ids Slurm placed on this node.
std::vector<std::uint32_t> local_global_ids(spank_t sp, std::uint32_t local_ntasks) {
  std::vector<std::uint32_t> ids;
  for (std::uint32_t local = 0; local < local_ntasks; ++local) {
    std::uint32_t global = 0;
    if (spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, local, &global) == ESPANK_SUCCESS)
      ids.push_back(global);
  }
  return ids;
}

// This node's remaining facts: the site env_file, socket_ifname=auto, and on the rank-0 node
// its own address and MASTER_PORT.
std::optional<Refusal> decide_node_extras(PluginState& state) {
  const Config& config = state.config;
  if (!config.env_file.empty()) {
    auto text = sys::read_file(config.env_file, k_max_env_file);
    if (!text) return here("env_file: " + text.error().message);
    auto parsed = parse_env_file(*text, config.env_file);
    if (!parsed) return here(parsed.error().message);
    state.site_env = std::move(*parsed);
  }
  if (config.omp_num_threads) state.step_cpus = sys::affinity_cpus();
  if (config.socket_ifname) {
    auto env =
        sys::socket_ifname_for(state.plan.master_addr, config.address, config.resolve_timeout);
    if (!env) return here(env.error().message);
    state.socket_env = std::move(*env);
  }
  if (state.plan.node_rank == 0) {
    if (auto checked = check_this_rank0_node(state.plan, config); !checked)
      return here(checked.error().message);
  }
  return std::nullopt;
}

// Step-wide facts first (every node refuses those alike), then this node's own.
std::optional<Refusal> decide_this_node(spank_t sp, PluginState& state) {
  const Config& config = state.config;
  if (state.config_error) return everywhere(*state.config_error);
  if (auto het_size = job_env(sp, "SLURM_HET_SIZE"); het_size && *het_size != "1")
    return everywhere(
        "heterogeneous steps are not supported by --ddp (SLURM_HET_SIZE=" + *het_size +
        "); launch one component per step, or set MASTER_ADDR/MASTER_PORT yourself");
  std::vector<std::string> keep;
  auto in = gather_inputs(sp, state.mode, keep);
  if (!in) return everywhere(in.error().message);
  auto nodes = Hostlist::parse(in->step_nodelist);  // parsed once, for the whole decision
  if (!nodes) return everywhere("SLURM_STEP_NODELIST: " + nodes.error().message);
  if (in->node_id < nodes->size()) state.node = nodes->at(in->node_id);
  // Only when nothing else says how many workers to start; hwloc is not used here on purpose:
  // it loads CUDA/NVML plugins into slurmstepd and takes hundreds of milliseconds.
  if (state.mode == Mode::torchrun && (!in->nproc_override || in->nproc_override->empty()) &&
      !in->gpus_on_node && !in->cuda_visible)
    in->gpus_detected = sys::nvidia_gpus();
  // The address decision waits for the layout checks: a refused layout needs no resolver.
  auto layout = plan_step(*in, *nodes, nodes->at(0), config.port_range);
  if (!layout) return everywhere(layout.error().message);

  if (auto window = check_port_window(config.port_range, sys::ephemeral_range()); !window)
    return here(window.error().message);
  state.global_ids = local_global_ids(sp, in->local_ntasks);
  if (auto placed = check_rank0_placement(*layout, state.global_ids); !placed)
    return here(placed.error().message);
  auto address = decide_head_address(gather_head(sp, config, nodes->at(0)), config.address);
  if (!address) return here(address.error().message);
  state.address = std::move(*address);
  state.plan = std::move(*layout);
  state.plan.master_addr = state.address.value;
  return decide_node_extras(state);
}

// Sets NAME=VALUE in the task's environment. With `keep`, a value already there stays (not an
// error). False, after reporting which variable and where it came from, when Slurm refuses.
bool set_task_env(spank_t sp, const std::string& name, const std::string& value, bool keep,
                  std::string_view origin) {
  spank_err_t rc = spank_setenv(sp, name.c_str(), value.c_str(), keep ? 0 : 1);
  if (rc == ESPANK_SUCCESS || (keep && rc == ESPANK_ENV_EXISTS)) return true;
  report_error("cannot set " + name + " (" + std::string(origin) + ")");
  return false;
}

// omp_num_threads=auto: OMP_NUM_THREADS for this task, from its CPUs; nullopt leaves it alone.
std::optional<std::string> task_omp_threads(spank_t sp, const PluginState& state) {
  auto current = job_env(sp, "OMP_NUM_THREADS");
  auto cpus_per_task = job_env(sp, "SLURM_CPUS_PER_TASK");
  auto cpus_on_node = job_env(sp, "SLURM_CPUS_ON_NODE");
  OmpInputs omp;
  omp.current = view(current);
  omp.cpus_per_task = view(cpus_per_task);
  omp.cpus_on_node = view(cpus_on_node);
  omp.task_cpus = sys::affinity_cpus();  // task_init runs in the task's own process
  omp.step_cpus = state.step_cpus;
  omp.local_ntasks = state.plan.local_ntasks;
  omp.workers_per_task = state.plan.mode == Mode::torchrun ? state.plan.nproc_per_node : 1;
  return omp_num_threads(omp);
}

// Ends this task before it runs any user code. Slurm ignores task_init's return value when the
// plugin is `optional` in plugstack.conf, so the refusal cannot be left to it; Slurm itself ends
// a task the same way (_exit(1) in exec_task) when a `required` plugin fails here.
[[noreturn]] void end_task() {
  ::_exit(1);
}

// All of this task's variables; false after reporting the first Slurm refused.
bool export_task(spank_t sp, const PluginState& state, const TaskInputs& task) {
  for (const auto& [name, value] : task_environment(state.plan, task)) {
    if (!set_task_env(sp, name, value, false, "--ddp")) return false;
  }
  // Site variables (NCCL, EFA): a value the user set explicitly wins unless env_override=yes.
  for (const auto& [name, value] : state.site_env) {
    if (!set_task_env(sp, name, value, !state.config.env_override, "env_file")) return false;
  }
  // Derived values never replace a value the user or env_file set.
  for (const auto& [name, value] : state.socket_env) {
    if (!set_task_env(sp, name, value, true, "socket_ifname=auto")) return false;
  }
  if (state.config.omp_num_threads) {
    if (auto threads = task_omp_threads(sp, state);
        threads && !set_task_env(sp, "OMP_NUM_THREADS", *threads, true, "omp_num_threads=auto"))
      return false;
  }
  return true;
}

// Calls slurm_kill_job_step with the arguments of the release the plugin is built against:
// (job, step, signal) up to Slurm 23.02, (job, step, signal, flags) from 23.11, and
// (slurm_step_id_t *, signal, flags) in 26.05, whose step id also carries a sluid (0: none).
template <class Fn>
int kill_step(Fn fn, std::uint32_t job_id, std::uint32_t step_id) {
  if constexpr (std::is_invocable_v<Fn, std::uint32_t, std::uint32_t, std::uint16_t>) {
    return fn(job_id, step_id, SIGKILL);
  } else if constexpr (std::is_invocable_v<Fn, slurm_step_id_t*, std::uint16_t, std::uint16_t>) {
    slurm_step_id_t id{};
    id.job_id = job_id;
    id.step_id = step_id;
    id.step_het_comp = NO_VAL;  // not a heterogeneous step's component
    return fn(&id, SIGKILL, 0);
  } else {
    return fn(job_id, step_id, SIGKILL, 0);
  }
}

// Asks slurmctld to end the step on every node, as `scancel JOB.STEP` does: the one request
// that reaches the other nodes without the nodes talking to each other.
Result<void> cancel_step(std::uint32_t job_id, std::uint32_t step_id) {
  auto kill = slurm_symbol<decltype(&slurm_kill_job_step)>("slurm_kill_job_step");
  if (!kill) return fail("slurm_kill_job_step is not available in slurmstepd");
  if (kill_step(kill, job_id, step_id) != 0) {
    const int error = errno;
    auto describe = slurm_symbol<decltype(&slurm_strerror)>("slurm_strerror");
    return fail(describe ? describe(error) : "error " + std::to_string(error));
  }
  return {};
}

}  // namespace

int remote_user_init(spank_t sp) {
  PluginState& state = plugin_state();
  if (!state.requested) return 0;
  std::uint32_t step_id = 0;
  if (spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS || is_special_step(step_id)) {
    return 0;  // the batch, extern and interactive steps run no DDP tasks: leave them untouched
  }
  state.active = true;
  state.verbose = srun_verbose(view(job_env(sp, "SRUN_DEBUG")));
  state.refusal = decide_this_node(sp, state);
  if (state.refusal) {
    // Shown by srun as "slurmstepd-NODE: error: ddp: ..."; the tasks end in task_init.
    report_error((state.node.empty() ? "" : state.node + ": ") + state.refusal->message);
  }
  return 0;
}

int remote_task_init(spank_t sp) {
  PluginState& state = plugin_state();
  if (!state.active) return 0;
  if (state.refusal) end_task();
  auto global_id = item<std::uint32_t>(sp, S_TASK_GLOBAL_ID, "the global task id");
  auto local_id = item<int>(sp, S_TASK_ID, "the local task id");
  if (!global_id || !local_id) {
    report_error(!global_id ? global_id.error().message : local_id.error().message);
    end_task();
  }
  // Slurm has applied the task's GPU binding (--gpus-per-task, --gpu-bind) by now.
  auto bind = job_env(sp, "DDP_GPU_BIND");
  auto visible = job_env(sp, "CUDA_VISIBLE_DEVICES");
  if (auto gpus = check_gpu_binding(state.plan.mode, view(visible), state.plan.most_ntasks,
                                    bind && *bind == "task");
      !gpus) {
    if (*local_id == 0) report_error(state.node + ": " + gpus.error().message);
    end_task();
  }
  if (state.verbose && *local_id == 0) {
    std::string line =
        explain_choice(state.node, state.address, state.plan, state.config.port_range) + "\n";
    if (auto ranks = explain_ranks(state.node, state.plan, state.global_ids)) line += *ranks + "\n";
    (void)!::write(STDERR_FILENO, line.data(), line.size());  // the task's stderr, shown by srun
  }
  TaskInputs task{*global_id, static_cast<std::uint32_t>(*local_id)};
  if (!export_task(sp, state, task)) end_task();
  return 0;
}

int remote_task_exit(spank_t sp) {
  PluginState& state = plugin_state();
  if (!state.active || !state.refusal || state.refusal->everywhere || state.cancel_requested)
    return 0;
  state.cancel_requested = true;
  auto job_id = item<std::uint32_t>(sp, S_JOB_ID, "the job id");
  auto step_id = item<std::uint32_t>(sp, S_JOB_STEPID, "the step id");
  if (!job_id || !step_id) return 0;
  if (auto cancelled = cancel_step(*job_id, *step_id); !cancelled)
    report_error(state.node + ": cannot end the step on the other nodes (" +
                 cancelled.error().message + "); their tasks run until they end: use srun -K");
  return 0;
}

}  // namespace ddp
