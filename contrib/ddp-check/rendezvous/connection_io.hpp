// One nonblocking TCP connection of ddp-check's TCP phase, with bounded input and pending
// output, and the socket helpers rank 0's listener and every rank's client share.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "ddp-check/rendezvous/hello.hpp"

namespace ddp::check {

using Clock = std::chrono::steady_clock;

// One TCP connection with bounded input and pending output.
struct Conn {
  int fd = -1;
  LineBuffer in;
  std::string out;
  std::optional<Hello> hello;  // rank 0: set once the hello is admitted
  std::string peer;
  Clock::time_point opened{};
  std::size_t received = 0;
  bool closed = false;
};

// strerror(err).
std::string errno_text(int err);

// Closes `fd` if open and marks it closed (-1).
void close_fd(int& fd);

// poll()'s timeout in ms until `until`, at most 1 s, rounded up.
int poll_timeout(Clock::time_point now, Clock::time_point until);

// "0.25 s", for messages.
std::string seconds_text(Clock::duration d);

// Reads what is there, until `c` holds `cap` bytes; false on EOF or error.
bool read_some(Conn& c, std::size_t cap = SIZE_MAX);

// Writes what it can; false on error.
bool write_some(Conn& c);

}  // namespace ddp::check
