// Every rank's side of the TCP phase: resolve MASTER_ADDR (bounded), connect with backoff, say
// the signed hello, read rank 0's verdicts.
#include "ddp-check/rendezvous/client_io.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "ddp-check/net/socket_io.hpp"
#include "ddp-check/rendezvous/auth.hpp"
#include "ddp-check/topology/interfaces.hpp"
#include "libddp/sys/system.hpp"

namespace ddp::check {

Client::Client(Identity& identity, const AuthConfig& auth_config, Clock::time_point until,
               std::string master)
    : id(identity), auth(auth_config), deadline(until), master_text(std::move(master)) {}

Client::~Client() {
  net::close_fd(client.fd);
}

// MASTER_ADDR's addresses, through the bounded resolver (net::resolve): a resolver that does
// not answer costs at most the time left before the deadline, never a hang.
std::optional<std::string> Client::resolve() {
  auto found = net::resolve(id.master_addr, id.master_port, deadline, "--timeout");
  if (!found) return "MASTER_ADDR: " + found.error().message;
  targets = std::move(*found);
  return std::nullopt;
}

void Client::start_connect(Clock::time_point now) {
  const net::Endpoint& target = targets[next_target % targets.size()];
  ++next_target;
  ++attempts;
  client = Conn{};
  net::Fd s = net::connect_start(target);
  if (s.fd < 0) {
    connect_failed(errno, now);
    return;
  }
  client.fd = s.release();
  connecting = true;  // finished at once (loopback) or in progress: on_connected() after poll
}

void Client::connect_failed(int err, Clock::time_point now) {
  last_error = net::errno_text(err);
  net::close_fd(client.fd);
  connecting = false;
  next_attempt = now + backoff;
  backoff = std::min(backoff * 2, k_max_backoff);
}

// Fills in the connection fields of this process's hello and signs it. An error is this
// process's own fault (munged unreachable).
std::optional<std::string> Client::on_connected() {
  connecting = false;
  connected = true;
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (getsockname(client.fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
    auto* sa = reinterpret_cast<sockaddr*>(&local);
    id.self.address = sys::address_text(sa);
    if (auto name = sys::interface_of(sa)) {
      id.self.ifname = *name;
      id.self.if_kind = std::string(kind_name(classify_interface(*name)));
    }
  }
  id.self.auth = auth.mode;
  id.self.cred = "-";
  if (auth.mode == AuthMode::munge) {
    auto cred = munge::sign(hello_body(id.self), auth.uid, auth.ttl_s, auth.munge_socket);
    if (!cred) return cred.error().message;
    id.self.cred = *cred;
  }
  client.out = format_hello(id.self);
  return std::nullopt;
}

// Client side after poll(): finishes the connect, sends the hello, reads the verdict.
// Sets `ex.verdict` or `ex.local_fault`; returns false when the run is over for a worker.
bool Client::client_ready(short revents, bool master, Exchange& ex) {
  if (connecting) {
    if (int err = net::connect_result(client.fd); err != 0) {
      connect_failed(err, Clock::now());
      return true;
    }
    if (auto fault = on_connected()) {
      ex.local_fault = *fault;
      return false;
    }
  }
  if (!client.out.empty() && !write_some(client)) {
    ex.local_fault = "lost the connection to rank 0 at " + master_text +
                     " while sending the hello: " + net::errno_text(errno);
    net::close_fd(client.fd);
    return master;
  }
  if (master || !(revents & (POLLIN | POLLHUP | POLLERR))) return true;
  const bool open = read_some(client);
  if (take_verdict(ex)) return false;
  if (!open || client.in.overflowed()) {
    ex.local_fault = "rank 0 at " + master_text +
                     " closed the connection without a verdict (it gave up already, or "
                     "crashed; see rank 0's output)";
    return false;
  }
  return true;
}

// The one verdict reader: the next line from rank 0 as ex.verdict, or a garbage line as
// ex.local_fault; false while no whole line is there.
bool Client::take_verdict(Exchange& ex) {
  auto line = client.in.next_line();
  if (!line) return false;
  auto verdict = parse_verdict(*line);
  if (verdict)
    ex.verdict = *verdict;
  else
    ex.local_fault = "rank 0 at " + master_text + " answered garbage: " + verdict.error().message;
  return true;
}

}  // namespace ddp::check
