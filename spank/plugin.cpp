// The only file that defines the plugin's exported symbols. Each callback switches on the
// Slurm context and runs its handler behind a wall: no exception, abort path or C++ error
// crosses into srun, sbatch or slurmstepd; failures become "ddp: ..." messages and -1.
#include <dlfcn.h>
#include <slurm/slurm_version.h>

#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "spank/plugin_state.hpp"

#define DDP_EXPORT __attribute__((visibility("default")))

namespace ddp {
namespace {

// Runs `body`; any escaping exception is reported and turned into -1. The handlers allocate
// nothing: after a bad_alloc, building a message would throw again, inside a noexcept function,
// and std::terminate would abort slurmstepd.
template <class Body>
int guarded(const char* callback, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    slurm_error("ddp: %s: out of memory", callback);
  } catch (const std::exception& e) {
    slurm_error("ddp: %s: %s", callback, e.what());
  } catch (...) {
    slurm_error("ddp: %s: unexpected error", callback);
  }
  return -1;
}

int option_callback(int /*val*/, const char* optarg, int remote) {
  return guarded("--ddp", [&] { return on_ddp_option(optarg, remote != 0); });
}

// This .so's path, so that a plugstack.conf message names the line to fix.
std::string plugin_path() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&option_callback), &info) == 0 || !info.dli_fname)
    return "spank_ddp.so";
  return info.dli_fname;
}

spank_option ddp_option = {
    const_cast<char*>("ddp"),
    const_cast<char*>("[MODE]"),
    const_cast<char*>("Export the PyTorch DDP environment (MASTER_ADDR, MASTER_PORT, RANK, ...) "
                      "to every task. MODE: tasks (default: one process per task) or torchrun "
                      "(one torchrun launcher per node)."),
    2,  // optional argument: --ddp or --ddp=MODE
    0,
    option_callback,
};

}  // namespace

PluginState& plugin_state() {
  static PluginState state;
  return state;
}

void report_error(const std::string& message) {
  slurm_error("ddp: %s", message.c_str());
}

int on_ddp_option(const char* value, bool remote) {
  PluginState& state = plugin_state();
  // srun, sbatch and salloc stop at a failed option callback whether the plugin is required or
  // optional (Slurm 22.05 spank_process_option()), so a broken configuration is refused here,
  // for --ddp only. slurmstepd refuses the step in user_init instead.
  if (state.config_error && !remote) {
    report_error(*state.config_error);
    return -1;
  }
  // salloc hands a bare --ddp to the srun steps of its allocation through the environment
  // variable SLURM_SPANK__SLURM_SPANK_OPTION_ddp_ddp, whose value for "no argument" is the text
  // "(null)" (a NULL formatted with %s; seen on Slurm 22.05). It means "no value".
  std::string_view given = value ? value : "";
  if (given == "(null)") given = "";
  auto mode = parse_mode(given, state.config.default_mode);
  if (!mode) {
    report_error(mode.error().message);
    return -1;
  }
  // Slurm may deliver the option more than once (environment, then command line); the last
  // value is the one that the step is launched with.
  state.requested = true;
  state.mode = *mode;
  return 0;
}

}  // namespace ddp

extern "C" {

DDP_EXPORT extern const char plugin_name[] = "ddp";
DDP_EXPORT extern const char plugin_type[] = "spank";
DDP_EXPORT extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;

DDP_EXPORT int slurm_spank_init(spank_t sp, int ac, char** av) {
  return ddp::guarded("init", [&] {
    std::vector<std::string_view> args(av, av + ac);
    auto config = ddp::parse_config(args);
    ddp::PluginState& state = ddp::plugin_state();
    if (config) {
      state.config = std::move(*config);
    } else {
      // Strict, yet never an outage: the error refuses --ddp steps only (option callback,
      // user_init); jobs without --ddp run, with `required` as with `optional`.
      state.config_error = "plugstack.conf, arguments of " + ddp::plugin_path() + ": " +
                           config.error().message + "; --ddp is refused until it is fixed";
      if (spank_context() == S_CTX_REMOTE) slurm_info("ddp: %s", state.config_error->c_str());
    }
    switch (spank_context()) {
      case S_CTX_LOCAL:
      case S_CTX_REMOTE:
      case S_CTX_ALLOCATOR:
        if (spank_option_register(sp, &ddp::ddp_option) != ESPANK_SUCCESS) {
          ddp::report_error("cannot register --ddp");
          return -1;
        }
        return 0;
      default:
        return 0;
    }
  });
}

DDP_EXPORT int slurm_spank_local_user_init(spank_t sp, int /*ac*/, char** /*av*/) {
  return ddp::guarded("local_user_init", [&] { return ddp::local_user_init(sp); });
}

DDP_EXPORT int slurm_spank_user_init(spank_t sp, int /*ac*/, char** /*av*/) {
  if (spank_context() != S_CTX_REMOTE) return 0;
  return ddp::guarded("user_init", [&] { return ddp::remote_user_init(sp); });
}

DDP_EXPORT int slurm_spank_task_init(spank_t sp, int /*ac*/, char** /*av*/) {
  if (spank_context() != S_CTX_REMOTE) return 0;
  return ddp::guarded("task_init", [&] { return ddp::remote_task_init(sp); });
}

DDP_EXPORT int slurm_spank_task_exit(spank_t sp, int /*ac*/, char** /*av*/) {
  if (spank_context() != S_CTX_REMOTE) return 0;
  return ddp::guarded("task_exit", [&] { return ddp::remote_task_exit(sp); });
}

}  // extern "C"
