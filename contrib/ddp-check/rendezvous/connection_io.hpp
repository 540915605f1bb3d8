// One nonblocking TCP connection of the rendezvous, with bounded input and pending output,
// which rank 0's listener and every rank's client share (sockets: net/socket_io.hpp).
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

// "0.25 s", for messages.
std::string seconds_text(Clock::duration d);

// Reads what is there, until `c` holds `cap` bytes; false on EOF or error.
bool read_some(Conn& c, std::size_t cap = SIZE_MAX);

// Writes what it can; false on error.
bool write_some(Conn& c);

}  // namespace ddp::check
