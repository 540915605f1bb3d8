#include "error.hpp"

namespace ddpgen {

std::string Error::to_string() const {
  if (where.line <= 0) return where.file + ": " + message;
  return where.file + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) + ": " +
         message;
}

}  // namespace ddpgen
