// JSON Schema of the job file and the site profile, for editors and for validators. The keys
// come from the tables the strict reader uses (job_keys(), profile_keys(), ...), so a key the
// reader accepts is in the schema and a key it refuses is not.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gen/core/model.hpp"

namespace ddpgen {

enum class SchemaKind { job, profile };

// Returns the JSON Schema (draft 2020-12) of kind, one property per line. Fails, naming the
// key, when a key of the reader's tables has no type here or a type here names no key: the
// schema and the reader cannot drift apart silently.
Result<std::string> json_schema(SchemaKind kind);

// Returns every key path a job file may set, dotted for nested keys ("checkpoint.requeue"), in
// the reader's order: what --set accepts, for shell completion.
std::vector<std::string> job_key_paths();

}  // namespace ddpgen
