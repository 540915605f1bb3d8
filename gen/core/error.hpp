// Errors of the generator core: a position in an input file and a message naming the fix.
#pragma once

#include <expected>
#include <string>

namespace ddpgen {

// Where an input value came from: FILE:LINE:COL (1-based), or a label such as "--set nodes=3"
// when line is 0.
struct Location {
  std::string file;
  int line = 0;
  int column = 0;
};

// One user-facing error; to_string() gives "FILE:LINE:COL: message".
struct Error {
  Location where;
  std::string message;

  // Returns "FILE:LINE:COL: message", or "LABEL: message" when there is no line.
  std::string to_string() const;
};

// What every fallible core function returns.
template <typename T>
using Result = std::expected<T, Error>;

// Thrown inside a decoder and caught at its public boundary, which returns Result; it never
// leaves the core.
struct DecodeFailure {
  Error error;
};

}  // namespace ddpgen
