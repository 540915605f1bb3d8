// Rank 0's side of ddp-check's TCP phase: listen on MASTER_PORT, accept, admit the hellos of
// its own job step and user (admit.hpp), refuse and describe the rest. A peer not yet admitted
// is a stranger: one bounded line, a deadline, a cap on how many wait at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddp-check/rendezvous/connection_io.hpp"
#include "ddp-check/rendezvous/session_io.hpp"

namespace ddp::check {

// A connection must deliver its hello this soon after it was accepted: a rank sends it at
// once, so only a stalled or hostile peer is cut off.
inline constexpr std::chrono::milliseconds k_hello_wait{3000};
// Connections still owing a hello; beyond this the oldest is dropped, so that a flood of idle
// connections cannot hold every descriptor.
inline constexpr std::size_t k_max_pending = 256;
// After accept() failed for want of descriptors, the listener rests this long instead of
// waking poll() again at once.
inline constexpr std::chrono::milliseconds k_accept_pause{100};
// Refused connections described in full; the rest are counted.
inline constexpr std::size_t k_max_described = 10;

// The listening socket and every connection rank 0 holds.
struct Listener {
  Listener(const Identity& identity, const AuthConfig& auth_config);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Listens on MASTER_PORT on every address (net::listen_any); the error says who holds the
  // port.
  std::optional<std::string> listen_any();
  // "rank 0 cannot listen on MASTER_PORT ...".
  std::string bind_error(int err);
  // Closes `c` as refused, describing the first few refusals in `out`.
  void refuse(Conn& c, const Hello* claimed, std::string_view why);
  // Rank 0's judgement of one hello line: parse, binding, credential.
  void admit_line(Conn& c, const std::string& line);
  // Reads a pending connection: admits or refuses its hello, or drops it when it closed.
  void serve(Conn& c);
  // Accepts every waiting connection, within the descriptor limit.
  void accept_all(Clock::time_point now);
  // Drops connections that owe their hello too long, and the oldest beyond k_max_pending.
  void expire_pending(Clock::time_point now);
  // Connections whose hello was admitted.
  std::size_t admitted() const;

  const Identity& id;
  const AuthConfig& auth;
  int listener = -1;
  std::vector<Conn> conns;
  Clock::time_point accept_after{};  // the listener rests until then (descriptor limit)
  std::size_t max_conns = 1024;      // connections rank 0 holds at most (descriptor limit)
  Exchange* out = nullptr;           // where run() collects refusals
};

}  // namespace ddp::check
