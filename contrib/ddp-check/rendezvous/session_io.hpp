// ddp-check's TCP phase: rank 0 listens on MASTER_PORT, every process (rank 0 included)
// connects to MASTER_ADDR:MASTER_PORT and says hello, rank 0 admits the hellos of its own job
// step and user (admit.hpp) and answers with a verdict. One poll() loop per process,
// nonblocking sockets, every wait bounded by the deadline, nothing polled that cannot progress.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ddp-check/options.hpp"
#include "ddp-check/rendezvous/hello.hpp"

namespace ddp::check {

using Clock = std::chrono::steady_clock;

// How this process signs its hello and how rank 0 checks the others'.
struct AuthConfig {
  AuthMode mode = AuthMode::munge;
  std::optional<std::string> munge_socket;  // nullopt: libmunge's default
  std::uint32_t uid = 0;                    // this process's uid: the only signer rank 0 admits
  unsigned ttl_s = 60;                      // lifetime of this process's credential
};

// What the exchange produced for this process.
struct Exchange {
  // Rank 0: every admitted hello (its own included when it could reach itself).
  std::vector<Hello> hellos;
  // Rank 0: why it could not reach itself at MASTER_ADDR:MASTER_PORT, if it could not.
  std::optional<std::string> self_unreachable;
  // Rank 0: the connections it refused, described (admit.hpp), the first few of them...
  std::vector<std::string> refused;
  // ...and how many there were in all.
  std::size_t refused_count = 0;
  // Rank 0: why a rank may have been kept out (the descriptor limit was reached), if so.
  std::optional<std::string> accept_trouble;
  // Other ranks: the verdict of rank 0.
  std::optional<Verdict> verdict;
  // A fault this process saw itself (unreachable master, no verdict, cannot listen).
  std::optional<std::string> local_fault;
};

class Session {
 public:
  // `self` has its rank fields set; the connection fields are filled in on connect.
  Session(Identity identity, AuthConfig auth, Clock::time_point deadline);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Rank 0: listen, connect to itself, admit hellos until WORLD_SIZE (its own view) arrived or
  // `collect_until`; other ranks: connect with backoff, say hello, wait for the verdict until
  // the deadline. Rank 0 then judges and calls broadcast().
  Exchange run(Clock::time_point collect_until);

  // Rank 0: sends `verdict` to every admitted process; waits until the lines are out or
  // `until`. Refused connections never receive anything (the NCCL id included).
  void broadcast(const Verdict& verdict, Clock::time_point until);

  // Other ranks: waits for one more verdict line (after the NCCL phase).
  Exchange await_verdict();

  // This process's hello as sent (connection fields filled in once connected).
  const Hello& self() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ddp::check
