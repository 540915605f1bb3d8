// ddp-check's TCP phase: one poll() loop over rank 0's listener (listener_io.hpp) and this
// process's connection to rank 0 (client_io.hpp).
#include "ddp-check/rendezvous/session_io.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

#include "ddp-check/net/socket_io.hpp"
#include "ddp-check/rendezvous/client_io.hpp"
#include "ddp-check/rendezvous/listener_io.hpp"

namespace ddp::check {
namespace {

// "ADDR:PORT", "[v6]:PORT", for messages.
std::string master_text(const Identity& id) {
  const bool v6 = id.master_addr.find(':') != std::string::npos;
  return (v6 ? "[" + id.master_addr + "]" : id.master_addr) + ":" + std::to_string(id.master_port);
}

}  // namespace

struct Session::State {
  State(Identity identity, AuthConfig auth_config, Clock::time_point deadline)
      : id(std::move(identity)),
        auth(std::move(auth_config)),
        to0(id, auth, deadline, master_text(id)),
        rank0(id, auth) {}

  Identity id;
  AuthConfig auth;
  Client to0;      // this process's connection to rank 0 (every rank)
  Listener rank0;  // rank 0's listener and connections

  // When the loop must wake up next, whatever poll() reports.
  Clock::time_point next_wake(bool master, Clock::time_point now, Clock::time_point until) const {
    Clock::time_point wake = until;
    if (!to0.connected && to0.client.fd < 0 && !to0.targets.empty())
      wake = std::min(wake, to0.next_attempt);
    if (!master) return wake;
    if (rank0.accept_after > now) wake = std::min(wake, rank0.accept_after);
    for (const auto& c : rank0.conns) {
      if (!c.hello) wake = std::min(wake, c.opened + k_hello_wait);
    }
    return wake;
  }

  // One poll() round; false when the run is over (for a worker: verdict or fault).
  bool poll_once(bool master, Clock::time_point until, Exchange& ex);
  Exchange run_master(Clock::time_point collect_until);
  Exchange run_worker();
};

bool Session::State::poll_once(bool master, Clock::time_point until, Exchange& ex) {
  const auto now = Clock::now();
  // Only what can make progress is polled: an admitted connection (or rank 0's own, once its
  // hello is out) that closes would otherwise report POLLHUP on every call and spin.
  std::vector<pollfd> fds;
  std::vector<Conn*> polled;
  const bool client_wants =
      to0.client.fd >= 0 && (to0.connecting || !to0.client.out.empty() || !master);
  if (client_wants)
    fds.push_back({to0.client.fd,
                   static_cast<short>(to0.connecting || !to0.client.out.empty() ? POLLOUT : POLLIN),
                   0});
  const bool listening = master && now >= rank0.accept_after;
  if (listening) fds.push_back({rank0.listener, POLLIN, 0});
  if (master) {
    for (auto& c : rank0.conns) {
      if (c.hello) continue;
      fds.push_back({c.fd, POLLIN, 0});
      polled.push_back(&c);
    }
  }
  int n = poll(fds.data(), fds.size(), net::poll_timeout(now, next_wake(master, now, until)));
  if (n < 0 && errno != EINTR) {
    ex.local_fault = std::string("poll: ") + net::errno_text(errno);
    return false;
  }
  if (n <= 0) return true;
  std::size_t at = 0;
  if (client_wants && fds[at++].revents && !to0.client_ready(fds[at - 1].revents, master, ex))
    return master && !ex.local_fault;
  if (!master) return true;
  const bool accept_ready = listening && fds[at++].revents;
  for (std::size_t i = 0; i < polled.size(); ++i) {
    if (fds[at + i].revents) rank0.serve(*polled[i]);
  }
  if (accept_ready) rank0.accept_all(Clock::now());
  return true;
}

Exchange Session::State::run_master(Clock::time_point collect_until) {
  Exchange ex;
  rank0.out = &ex;
  if (auto err = to0.resolve()) ex.self_unreachable = *err;
  if (auto err = rank0.listen_any()) {
    ex.local_fault = *err;
    return ex;
  }
  const std::size_t world = id.self.world_size;
  while (Clock::now() < collect_until && rank0.admitted() < world) {
    if (!to0.targets.empty() && to0.client.fd < 0 && !to0.connected &&
        Clock::now() >= to0.next_attempt)
      to0.start_connect(Clock::now());
    if (!poll_once(true, collect_until, ex)) break;
    rank0.expire_pending(Clock::now());
  }
  for (const auto& c : rank0.conns) {
    if (c.hello) ex.hellos.push_back(*c.hello);
  }
  if (!to0.connected && !ex.self_unreachable) {
    ex.self_unreachable = "rank 0 (" + id.self.host + ") cannot reach itself at " +
                          to0.master_text + ": " + to0.last_error +
                          " (does MASTER_ADDR name this host?)";
  }
  net::close_fd(rank0.listener);
  rank0.out = nullptr;
  return ex;
}

Exchange Session::State::run_worker() {
  Exchange ex;
  if (auto err = to0.resolve()) {
    ex.local_fault = *err;
    return ex;
  }
  while (Clock::now() < to0.deadline) {
    if (to0.client.fd < 0 && !to0.connected && Clock::now() >= to0.next_attempt)
      to0.start_connect(Clock::now());
    if (!poll_once(false, to0.deadline, ex)) return ex;
  }
  const auto waited = seconds_text(Clock::now() - to0.start);
  if (!to0.connected) {
    ex.local_fault = "cannot reach the master at " + to0.master_text +
                     " (MASTER_ADDR:MASTER_PORT) within " + waited + " after " +
                     std::to_string(to0.attempts) + " attempts: " + to0.last_error +
                     "; is rank 0 running, and is MASTER_ADDR reachable from " + id.self.host + "?";
  } else {
    ex.local_fault = "connected to rank 0 at " + to0.master_text + " but got no verdict within " +
                     waited + " (rank 0 still waiting for other ranks, or hung)";
  }
  return ex;
}

Session::Session(Identity identity, AuthConfig auth, Clock::time_point deadline)
    : state_(std::make_unique<State>(std::move(identity), std::move(auth), deadline)) {}

Session::~Session() = default;

const Hello& Session::self() const {
  return state_->id.self;
}

Exchange Session::run(Clock::time_point collect_until) {
  return state_->id.is_master() ? state_->run_master(collect_until) : state_->run_worker();
}

void Session::broadcast(const Verdict& verdict, Clock::time_point until) {
  State& s = *state_;
  const std::string line = format_verdict(verdict);
  for (auto& c : s.rank0.conns) {
    if (c.hello) c.out += line;
  }
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Conn*> pending;
    for (auto& c : s.rank0.conns) {
      if (c.fd < 0 || c.out.empty()) continue;
      if (!write_some(c)) {
        net::close_fd(c.fd);
        continue;
      }
      if (!c.out.empty()) {
        fds.push_back({c.fd, POLLOUT, 0});
        pending.push_back(&c);
      }
    }
    const auto now = Clock::now();
    if (fds.empty() || now >= until) return;
    if (poll(fds.data(), fds.size(), net::poll_timeout(now, until)) < 0 && errno != EINTR) return;
  }
}

Exchange Session::await_verdict() {
  State& s = *state_;
  Exchange result;
  bool open = s.to0.client.fd >= 0;
  for (;;) {
    if (s.to0.take_verdict(result)) return result;
    if (!open) {
      result.local_fault =
          "rank 0 at " + s.to0.master_text + " closed the connection without a final verdict";
      return result;
    }
    const auto now = Clock::now();
    if (now >= s.to0.deadline) {
      result.local_fault = "no final verdict from rank 0 at " + s.to0.master_text + " within " +
                           seconds_text(now - s.to0.start);
      return result;
    }
    pollfd p{s.to0.client.fd, POLLIN, 0};
    if (poll(&p, 1, net::poll_timeout(now, s.to0.deadline)) > 0) open = read_some(s.to0.client);
  }
}

}  // namespace ddp::check
