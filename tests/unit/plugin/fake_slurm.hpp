// A scripted stand-in for the Slurm process that loads spank_ddp.so: the test program defines
// the spank_* and slurm_* functions the plugin calls (exported, so that the dlopen()ed plugin
// binds to them), and this header lets a test set up one step and read what the plugin did.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

extern "C" {
#include <slurm/spank.h>
}

namespace fake {

// One kill request the plugin sent, as slurm_kill_job_step received it.
struct KillRequest {
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
  std::uint16_t signal = 0;
};

// Everything a test scripts about the step and every effect of the plugin, in one place.
struct Step {
  spank_context_t context = S_CTX_REMOTE;
  std::map<std::string, std::string> env;         // the job's environment: spank_getenv/setenv
  std::map<spank_item_t, std::uint32_t> items;    // S_JOB_ID, S_JOB_STEPID, S_TASK_ID, ...
  std::vector<std::uint32_t> global_ids;          // S_JOB_LOCAL_TO_GLOBAL_ID, by local id
  std::optional<std::string> refuse_setenv;       // spank_setenv fails for this variable
  std::map<std::string, std::string> node_addrs;  // NodeName -> NodeAddr (slurm.conf)
  int kill_result = 0;                            // slurm_kill_job_step's return value
  std::vector<spank_option> options;              // what spank_option_register received
  std::vector<std::string> errors;                // slurm_error lines, formatted
  std::vector<std::string> infos;                 // slurm_info lines, formatted
  std::vector<KillRequest> kills;                 // slurm_kill_job_step calls
  int getenv_calls = 0;                           // spank_getenv calls (buffer growth)
};

// The step the fake Slurm functions read and write; reset by the test fixture.
Step& step();

// The handle the plugin receives; the fake functions accept only this one.
spank_t handle();

// While true, every operator new of the process throws std::bad_alloc, except inside the fake
// Slurm functions (Slurm's own logging is not the plugin's to guard): memory ran out.
extern bool out_of_memory;

}  // namespace fake
