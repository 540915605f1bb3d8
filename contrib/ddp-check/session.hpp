// ddp-check's TCP phase: rank 0 listens on MASTER_PORT, every process (rank 0 included)
// connects to MASTER_ADDR:MASTER_PORT and says hello, rank 0 answers with a verdict. One
// poll() loop per process, nonblocking sockets, every wait bounded by the deadline.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hello.hpp"
#include "options.hpp"

namespace ddp::check {

using Clock = std::chrono::steady_clock;

// What the exchange produced for this process.
struct Exchange {
  // Rank 0: every hello that arrived (its own included when it could reach itself).
  std::vector<Hello> hellos;
  // Rank 0: why it could not reach itself at MASTER_ADDR:MASTER_PORT, if it could not.
  std::optional<std::string> self_unreachable;
  // Other ranks: the verdict of rank 0.
  std::optional<Verdict> verdict;
  // A fault this process saw itself (unreachable master, no verdict, cannot listen).
  std::optional<std::string> local_fault;
};

class Session {
 public:
  // `self` has its rank fields set; the connection fields are filled in on connect.
  Session(Identity identity, Clock::time_point deadline);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Rank 0: listen, connect to itself, collect hellos until all `expected` arrived (or the
  // sizes they announce) or `collect_until`; other ranks: connect with backoff, say hello,
  // wait for the verdict until the deadline. Rank 0 then judges and calls broadcast().
  Exchange run(Clock::time_point collect_until);

  // Rank 0: sends `verdict` to every process that said hello; waits until the lines are out
  // or `until`.
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
