// Bounded TCP for the pairwise phase: every call that waits takes a deadline and gives up at
// it. Nonblocking sockets, poll(), no signal on a closed peer.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

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
};

// Whether `fd` became ready for `events` before the deadline.
bool wait_fd(int fd, short events, Clock::time_point deadline);

// A listener on every address, IPv4 and IPv6, on `port` (0: any free one).
Fd listen_tcp(std::uint16_t port);
// The local port of a socket, 0 if unknown.
std::uint16_t port_of(int fd);
// The next connection before the deadline; `peer` gets its address.
Fd accept_until(int lfd, Clock::time_point deadline, std::string* peer = nullptr);
// A connection to host:port, tried again every 100 ms until the deadline.
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
