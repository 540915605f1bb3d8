// JSON Schema of the job file and the site profile, for editors and for validators. The keys and
// their types come from the tables the strict reader decodes with (job_catalog(),
// profile_catalog()), so a key the reader accepts is in the schema and a key it refuses is not.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gen/core/model.hpp"

namespace ddpgen {

enum class SchemaKind { job, profile };

// Returns the JSON Schema (draft 2020-12) of kind, one property per line.
Result<std::string> json_schema(SchemaKind kind);

// Returns every key path a job file may set, dotted for nested keys ("checkpoint.requeue"), in
// the reader's order: what --set accepts, for shell completion.
std::vector<std::string> job_key_paths();

}  // namespace ddpgen
