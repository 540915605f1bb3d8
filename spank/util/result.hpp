// Error type and Result alias shared by the core: low levels return, never throw.
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace ddp {

// A failure with a message ready for users: it names the culprit and, where possible, the fix.
struct Error {
  std::string message;
};

template <class T>
using Result = std::expected<T, Error>;

// Shorthand for returning a failure: `return fail("bad value")`.
inline std::unexpected<Error> fail(std::string message) {
  return std::unexpected<Error>(Error{std::move(message)});
}

}  // namespace ddp
