// Every rank's side of ddp-check's TCP phase (rank 0 included): resolve MASTER_ADDR through the
// plugin's bounded resolver, connect with backoff, send the signed hello, read the verdicts.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "ddp-check/net/socket_io.hpp"
#include "ddp-check/rendezvous/connection_io.hpp"
#include "ddp-check/rendezvous/session_io.hpp"

namespace ddp::check {

inline constexpr std::chrono::milliseconds k_first_backoff{50};
inline constexpr std::chrono::milliseconds k_max_backoff{1000};

// The connection to rank 0 and its state; `id.self` gets the connection fields and the
// credential once connected.
struct Client {
  Client(Identity& identity, const AuthConfig& auth_config, Clock::time_point until,
         std::string master);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // MASTER_ADDR's addresses into `targets`, waiting at most until the deadline; the error says
  // why it cannot be resolved.
  std::optional<std::string> resolve();
  // Starts a nonblocking connect to the next target.
  void start_connect(Clock::time_point now);
  // Records a failed connect and schedules the next attempt (exponential backoff).
  void connect_failed(int err, Clock::time_point now);
  // Fills in the connection fields of this process's hello and signs it. An error is this
  // process's own fault (munged unreachable).
  std::optional<std::string> on_connected();
  // After poll(): finishes the connect, sends the hello, reads the verdict. Sets `ex.verdict` or
  // `ex.local_fault`; returns false when the run is over for a worker.
  bool client_ready(short revents, bool master, Exchange& ex);
  // The one verdict reader: the next line from rank 0 as ex.verdict, or a garbage line as
  // ex.local_fault; false while no whole line is there.
  bool take_verdict(Exchange& ex);

  Identity& id;
  const AuthConfig& auth;
  Clock::time_point start = Clock::now();
  Clock::time_point deadline;
  std::string master_text;  // "ADDR:PORT" for messages
  std::vector<net::Endpoint> targets;
  std::size_t next_target = 0;
  Conn client;
  bool connecting = false;
  bool connected = false;
  Clock::time_point next_attempt = Clock::now();
  std::chrono::milliseconds backoff = k_first_backoff;
  unsigned attempts = 0;
  std::string last_error = "not tried yet";
};

}  // namespace ddp::check
