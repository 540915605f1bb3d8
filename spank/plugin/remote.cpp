// slurmstepd's side of --ddp: gathers Slurm's facts for this node and task, asks the core for
// the environment, applies it, and checks on the rank-0 node that the rendezvous can work.
#include <slurm/slurm.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "address.hpp"
#include "environment.hpp"
#include "hostlist.hpp"
#include "plugin_state.hpp"
#include "system.hpp"
#include "tuning.hpp"

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

// The address (or name, under addr=hostname) every node exports as MASTER_ADDR.
Result<std::string> master_address(const std::string& head, const AddressPolicy& policy) {
  std::string name = rewrite_host(head, policy);
  if (policy.mode == AddrMode::hostname) return name;
  auto resolved = sys::resolve_host(name);
  if (!resolved) return fail(resolved.error().message + " (head node of this step)");
  auto chosen = choose_address(*resolved, policy, name);
  if (!chosen) return fail(chosen.error().message);
  return chosen->to_string();
}

// On the node of RANK 0: MASTER_ADDR must be one of this node's own, non-loopback addresses,
// and the port must be free; otherwise every rank would wait in init_process_group until timeout.
Result<void> check_rank0_node(const StepPlan& plan, const Config& config) {
  std::vector<IpAddress> targets;
  if (config.address.mode == AddrMode::hostname) {
    auto resolved = sys::resolve_host(plan.master_addr);
    if (!resolved) return fail(resolved.error().message);
    for (const IpAddress& a : *resolved) {
      if (!a.is_loopback()) targets.push_back(a);
    }
    if (targets.empty()) {
      return fail("MASTER_ADDR=" + plan.master_addr +
                  " resolves only to loopback addresses on the rank-0 node; other nodes cannot "
                  "reach it: fix /etc/hosts or DNS, or set addr=ip with networks=CIDR");
    }
  } else {
    auto parsed = IpAddress::parse(plan.master_addr);
    if (!parsed) return fail(parsed.error().message);
    targets.push_back(*parsed);
  }

  if (config.check_addr) {
    const std::vector<IpAddress> own = sys::local_addresses();
    auto is_own = [&](const IpAddress& a) {
      return std::find(own.begin(), own.end(), a) != own.end();
    };
    if (std::none_of(targets.begin(), targets.end(), is_own)) {
      std::string listed;
      for (const IpAddress& a : own) {
        if (a.is_loopback()) continue;
        listed += (listed.empty() ? "" : ", ") + a.to_string();
      }
      return fail("MASTER_ADDR=" + plan.master_addr + " is not an address of the rank-0 node " +
                  "(its addresses: " + (listed.empty() ? "none" : listed) +
                  "); set host_suffix=, host_domain= or networks= in plugstack.conf so that the "
                  "head node's name resolves to one of them");
    }
  }
  if (config.check_port) {
    for (const IpAddress& a : targets) {
      if (auto bound = sys::test_bind(a, plan.master_port); !bound) {
        return fail("MASTER_PORT=" + std::to_string(plan.master_port) + " is not free on the " +
                    "rank-0 node (" + bound.error().message +
                    "); set DDP_MASTER_PORT=PORT, or ask the site for MpiParams=ports= and use "
                    "srun --resv-ports");
      }
    }
  }
  return {};
}

// socket_ifname=auto: the interface this node's route to MASTER_ADDR leaves through. On the
// rank-0 node MASTER_ADDR is local, and the kernel's answer is the interface that holds it.
Result<EnvList> socket_ifname_env(const StepPlan& plan) {
  IpAddress destination;
  if (auto literal = IpAddress::parse(plan.master_addr)) {
    destination = *literal;
  } else {
    // addr=hostname: the first non-loopback address, the one a TCP client would try first.
    auto resolved = sys::resolve_host(plan.master_addr);
    if (!resolved) return fail("socket_ifname=auto: " + resolved.error().message);
    if (resolved->empty())
      return fail("socket_ifname=auto: " + plan.master_addr + " has no address");
    auto usable = std::find_if(resolved->begin(), resolved->end(),
                               [](const IpAddress& a) { return !a.is_loopback(); });
    destination = usable != resolved->end() ? *usable : resolved->front();
  }
  auto source = sys::route_source(destination);
  if (!source) {
    return fail("socket_ifname=auto: MASTER_ADDR=" + plan.master_addr + ": " +
                source.error().message + " from this node; check its routes to the head node");
  }
  const std::vector<InterfaceAddress> interfaces = sys::interface_addresses();
  auto name = interface_for_route(*source, interfaces, plan.master_addr);
  if (!name) return fail(name.error().message);
  return socket_ifname_environment(*name);
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

Result<StepPlan> plan_this_node(spank_t sp, const Config& config, Mode mode) {
  auto job_id = item<std::uint32_t>(sp, S_JOB_ID, "the job id");
  auto step_id = item<std::uint32_t>(sp, S_JOB_STEPID, "the step id");
  auto node_id = item<std::uint32_t>(sp, S_JOB_NODEID, "the node id");
  auto ntasks = item<std::uint32_t>(sp, S_JOB_TOTAL_TASK_COUNT, "the task count");
  auto local_ntasks = item<std::uint32_t>(sp, S_JOB_LOCAL_TASK_COUNT, "the local task count");
  for (const auto* r : {&job_id, &step_id, &node_id, &ntasks, &local_ntasks}) {
    if (!*r) return fail(r->error().message);
  }

  if (auto het_size = job_env(sp, "SLURM_HET_SIZE"); het_size && *het_size != "1") {
    return fail("heterogeneous steps are not supported by --ddp (SLURM_HET_SIZE=" + *het_size +
                "); launch one component per step, or set MASTER_ADDR/MASTER_PORT yourself");
  }
  auto nodelist = job_env(sp, "SLURM_STEP_NODELIST");
  if (!nodelist) return fail("SLURM_STEP_NODELIST is not set in this step");
  auto tasks_per_node = job_env(sp, "SLURM_STEP_TASKS_PER_NODE");
  auto user_port = job_env(sp, "DDP_MASTER_PORT");
  auto reserved = job_env(sp, "SLURM_STEP_RESV_PORTS");
  auto nproc = job_env(sp, "DDP_NPROC_PER_NODE");
  auto gpus = job_env(sp, "SLURM_GPUS_ON_NODE");
  auto cuda = job_env(sp, "CUDA_VISIBLE_DEVICES");

  auto head = head_host(*nodelist);
  if (!head) return fail(head.error().message);
  auto address = master_address(*head, config.address);
  if (!address) return fail(address.error().message);

  NodeInputs in;
  in.mode = mode;
  in.step_nodelist = *nodelist;
  in.tasks_per_node = tasks_per_node ? std::string_view(*tasks_per_node) : std::string_view();
  in.node_id = *node_id;
  in.ntasks = *ntasks;
  in.local_ntasks = *local_ntasks;
  in.job_id = *job_id;
  in.step_id = *step_id;
  in.user_port = view(user_port);
  in.reserved_ports = view(reserved);
  in.nproc_override = view(nproc);
  in.gpus_on_node = view(gpus);
  in.cuda_visible = view(cuda);
  // Only when nothing else says how many workers to start: reading the driver's list is cheap,
  // but no step should pay for what it does not use. hwloc is not used here on purpose: it
  // loads plugins (CUDA, NVML, OpenCL) into slurmstepd and takes hundreds of milliseconds.
  if (mode == Mode::torchrun && (!nproc || nproc->empty()) && !gpus && !cuda)
    in.gpus_detected = sys::nvidia_gpus();
  return plan_step(in, *address, config.port_range);
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

  auto run = [&]() -> Result<void> {
    const Config& config = state.config;
    if (auto ephemeral = sys::ephemeral_range();
        ephemeral && config.port_range.overlaps(*ephemeral)) {
      return fail("port_range=" + std::to_string(config.port_range.first) + "-" +
                  std::to_string(config.port_range.last) +
                  " overlaps this node's ephemeral port range " + std::to_string(ephemeral->first) +
                  "-" + std::to_string(ephemeral->last) +
                  " (net.ipv4.ip_local_port_range); choose a port_range below it");
    }
    if (!config.env_file.empty()) {
      auto text = sys::read_file(config.env_file);
      if (!text) return fail("env_file: " + text.error().message);
      auto parsed = parse_env_file(*text, config.env_file);
      if (!parsed) return fail(parsed.error().message);
      state.site_env = std::move(*parsed);
    }
    auto plan = plan_this_node(sp, config, state.mode);
    if (!plan) return fail(plan.error().message);
    state.plan = std::move(*plan);
    if (config.omp_num_threads) state.step_cpus = sys::affinity_cpus();
    if (config.socket_ifname) {
      auto env = socket_ifname_env(state.plan);
      if (!env) return fail(env.error().message);
      state.socket_env = std::move(*env);
    }
    if (state.plan.node_rank == 0) return check_rank0_node(state.plan, config);
    return {};
  };
  if (auto ok = run(); !ok) {
    // Slurm does not pass user_init failures back to srun (pyxis, SchedMD bug 7573): report now
    // for the node's log, and fail every task of this node in task_init.
    state.failure = ok.error().message;
    report_error(*state.failure);
  }
  return 0;
}

int remote_task_init(spank_t sp) {
  PluginState& state = plugin_state();
  if (!state.active) return 0;
  if (state.failure) {
    report_error(*state.failure);
    return -1;
  }
  auto global_id = item<std::uint32_t>(sp, S_TASK_GLOBAL_ID, "the global task id");
  auto local_id = item<int>(sp, S_TASK_ID, "the local task id");
  if (!global_id || !local_id) {
    report_error(!global_id ? global_id.error().message : local_id.error().message);
    return -1;
  }
  if (state.plan.mode == Mode::tasks && *global_id == 0 && state.plan.node_rank != 0) {
    report_error("RANK 0 was placed on step node " + std::to_string(state.plan.node_rank) +
                 ", not on the step's first node; --ddp needs block or cyclic task distribution "
                 "(not arbitrary distribution or SLURM_HOSTFILE)");
    return -1;
  }

  TaskInputs task{*global_id, static_cast<std::uint32_t>(*local_id)};
  for (const auto& [name, value] : task_environment(state.plan, task)) {
    if (!set_task_env(sp, name, value, false, "--ddp")) return -1;
  }
  // Site variables (NCCL, EFA): a value the user set explicitly wins unless env_override=yes.
  for (const auto& [name, value] : state.site_env) {
    if (!set_task_env(sp, name, value, !state.config.env_override, "env_file")) return -1;
  }
  // Derived values never replace a value the user or env_file set.
  for (const auto& [name, value] : state.socket_env) {
    if (!set_task_env(sp, name, value, true, "socket_ifname=auto")) return -1;
  }
  if (state.config.omp_num_threads) {
    if (auto threads = task_omp_threads(sp, state);
        threads && !set_task_env(sp, "OMP_NUM_THREADS", *threads, true, "omp_num_threads=auto"))
      return -1;
  }
  return 0;
}

}  // namespace ddp
