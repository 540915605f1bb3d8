// The job file's settings, one table per mapping (gen/core/settings.hpp): the top level and
// its sections container, checkpoint, watchdog, heal, preflight, mail, activate, accelerate.
#pragma once

#include "gen/core/model.hpp"
#include "gen/core/settings.hpp"

namespace ddpgen {

// The top level of a job file. Its sections decode through their rows.
const settings::Table<Job>& job_table();

// Every table of the job file: "job" for the top level, then each section by its key.
const settings::Catalog& job_catalog();

}  // namespace ddpgen
