// Decoding a job file (strict) with --set KEY=VALUE overrides.
#pragma once

#include <string>
#include <vector>

#include "gen/core/model.hpp"

namespace ddpgen {

// The keys a job file may have at its top level: the names of job_table()'s rows
// (gen/core/job_keys.hpp), as are the section key lists below.
const std::vector<std::string>& job_keys();
// The keys of the job file's nested mappings: container, checkpoint, mail, watchdog, activate,
// accelerate, torchrun, heal, preflight (which may also be true or false), logs, sweep.
const std::vector<std::string>& job_container_keys();
const std::vector<std::string>& job_checkpoint_keys();
const std::vector<std::string>& job_mail_keys();
const std::vector<std::string>& job_watchdog_keys();
const std::vector<std::string>& job_activate_keys();
const std::vector<std::string>& job_accelerate_keys();
const std::vector<std::string>& job_torchrun_keys();
const std::vector<std::string>& job_heal_keys();
const std::vector<std::string>& job_preflight_keys();
const std::vector<std::string>& job_logs_keys();
const std::vector<std::string>& job_sweep_keys();

// Decodes job-file text named file. sets are "KEY=VALUE" overrides (KEY may be dotted, as in
// checkpoint.requeue; VALUE is YAML, so "args=[-v, --lr=3]" is a list) applied before decoding,
// so they are checked exactly like the file. Only shapes and types are checked here; whether
// the job fits a site is plan()'s business.
Result<Job> decode_job(const std::string& text, const std::string& file,
                       const std::vector<std::string>& sets);

}  // namespace ddpgen
