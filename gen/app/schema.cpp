// ddpgen schema job|profile [--keys].
#include <iostream>

#include "gen/app/commands.hpp"

namespace ddpgen::app {

Result<void> print_schema(SchemaKind kind, bool keys) {
  if (keys) {
    for (const auto& path : job_key_paths()) std::cout << path << "\n";
    return {};
  }
  auto schema = json_schema(kind);
  if (!schema) return std::unexpected(schema.error());
  std::cout << *schema;
  return {};
}

}  // namespace ddpgen::app
