// ddp-check's one socket toolkit, for the rendezvous (rendezvous/) and the pairwise phase
// (pairs/): listen on every address (dual-stack when the kernel has IPv6, IPv4 alone when it
// has not), resolve through the bounded resolver, connect, accept, send and receive. Every
// call that waits takes a deadline and gives up at it. Nonblocking sockets, poll(), no signal
// on a closed peer.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "libddp/util/result.hpp"

namespace ddp::check::net {

using Clock = std::chrono::steady_clock;

// A socket closed when it goes out of scope; fd -1 when there is none.
struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  ~Fd();
  // Hands the descriptor to the caller, who closes it.
  int release() { return std::exchange(fd, -1); }
};

// strerror(err).
std::string errno_text(int err);
// Closes `fd` if open and marks it closed (-1).
void close_fd(int& fd);
// poll()'s timeout in ms until `until`, at most 1 s, rounded up.
int poll_timeout(Clock::time_point now, Clock::time_point until);
// Whether `fd` became ready for `events` before the deadline.
bool wait_fd(int fd, short events, Clock::time_point deadline);

// Why listen_any() failed: errno, and whether bind() succeeded and listen() did not.
struct ListenError {
  int err = 0;
  bool at_listen = false;
};
// A nonblocking listener on every address on `port` (0: any free one): the IPv6 wildcard
// with IPV6_V6ONLY off, which takes IPv4 peers too, when the kernel has IPv6; the IPv4
// wildcard when it has not (socket(AF_INET6) fails with EAFNOSUPPORT, or the IPv6 wildcard
// cannot be bound: EADDRNOTAVAIL). Fd -1 on failure, `why` says at which step.
Fd listen_any(std::uint16_t port, int backlog = SOMAXCONN, ListenError* why = nullptr);
// The local port of a socket of either family, 0 if unknown.
std::uint16_t port_of(int fd);
// The next waiting connection, nonblocking, without waiting: fd -1 and errno (EAGAIN when
// none waits). `peer` gets its address ("10.0.0.5", an IPv4-mapped peer as IPv4).
Fd accept_now(int lfd, std::string* peer = nullptr);
// The next connection before the deadline.
Fd accept_until(int lfd, Clock::time_point deadline, std::string* peer = nullptr);

// One address to connect to.
struct Endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;
};
// `host`'s addresses with `port`, through the bounded resolver (getaddrinfo_a, never a
// blocking getaddrinfo): the wait lasts until the deadline, at least 1 s; at the bound the
// error says so and names `bound_by`.
Result<std::vector<Endpoint>> resolve(const std::string& host, std::uint16_t port,
                                      Clock::time_point deadline,
                                      std::string_view bound_by = "--timeout");
// A nonblocking socket with TCP_NODELAY whose connect() to `to` has started (or finished, on
// loopback); fd -1 and errno when it failed at once.
Fd connect_start(const Endpoint& to);
// The outcome of a connect that poll() reported: 0, or the errno it failed with.
int connect_result(int fd);
// A connection to one of `targets`, each tried in turn, again every 100 ms until the
// deadline (the listener may not be up yet).
Fd connect_until(const std::vector<Endpoint>& targets, Clock::time_point deadline);
// A connection to host:port: resolve() then connect_until(); fd -1 when the name cannot be
// resolved or nothing answered before the deadline.
Fd connect_tcp(const std::string& host, std::uint16_t port, Clock::time_point deadline);

// Whether all of `data` was sent before the deadline.
bool send_all(int fd, std::string_view data, Clock::time_point deadline);
// One line without its newline; what follows stays in `buf`. Nothing at the deadline, the end
// of the stream, or a line over 512 bytes.
std::optional<std::string> read_line(int fd, std::string& buf, Clock::time_point deadline);
// Sends zeros for `seconds` (at most until the deadline), then ends the stream.
bool send_for(int fd, double seconds, Clock::time_point deadline);
// Reads to the end of the stream; Gbit/s from the first byte to the last.
std::optional<double> receive_rate(int fd, Clock::time_point deadline);

}  // namespace ddp::check::net
