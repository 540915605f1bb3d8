// The one error type of the project, shared by the plugin, ddp-check and ddpgen, and the Result
// alias every fallible function returns: low levels return, never throw.
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace ddp {

// Where an input value came from: FILE:LINE:COL (1-based), or a label such as "--set nodes=3"
// when line is 0, or nowhere in particular when file is empty.
struct Location {
  std::string file;
  int line = 0;
  int column = 0;
};

// A failure with a message ready for users: it names the culprit and, where possible, the fix.
struct Error {
  std::string message;
  Location where;

  // "FILE:LINE:COL: message", "LABEL: message" without a line, or the message alone without a
  // file. One line for a terminal or a log, made text::printable(): a control character that
  // reached the message inside a hostile value or file name is shown as \xNN, so it cannot move
  // the cursor or forge lines.
  std::string to_string() const;
};

template <class T>
using Result = std::expected<T, Error>;

// Shorthand for returning a failure: `return fail("bad value")`.
inline std::unexpected<Error> fail(std::string message) {
  return std::unexpected<Error>(Error{std::move(message), {}});
}

// A failure at a place in an input: `return fail({file, line, column}, "unknown key")`.
inline std::unexpected<Error> fail(Location where, std::string message) {
  return std::unexpected<Error>(Error{std::move(message), std::move(where)});
}

}  // namespace ddp
