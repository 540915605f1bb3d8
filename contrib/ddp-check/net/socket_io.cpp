// Bounded TCP for the pairwise phase.
#include "ddp-check/net/socket_io.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>
#include <vector>

#include "libddp/sys/system.hpp"

namespace ddp::check::net {
namespace {

constexpr std::size_t k_chunk = 256 * 1024;

int ms_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<long long>(left.count(), 0, 60'000));
}

}  // namespace

bool wait_fd(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    int n = poll(&p, 1, ms_left(deadline));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

Fd::~Fd() {
  if (fd >= 0) close(fd);
}

// Listens on every address, IPv4 and IPv6, on `port` (0: any free one).
Fd listen_tcp(std::uint16_t port) {
  Fd s(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (s.fd < 0) return s;
  int off = 0, on = 1;
  setsockopt(s.fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  setsockopt(s.fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_any;
  a.sin6_port = htons(port);
  if (bind(s.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(s.fd, 64) != 0) {
    return Fd();
  }
  return s;
}

std::uint16_t port_of(int fd) {
  sockaddr_in6 a{};
  socklen_t len = sizeof a;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  return ntohs(a.sin6_port);
}

Fd accept_until(int lfd, Clock::time_point deadline, std::string* peer) {
  while (wait_fd(lfd, POLLIN, deadline)) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    Fd c(accept4(lfd, reinterpret_cast<sockaddr*>(&a), &len, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (c.fd < 0) continue;
    if (peer != nullptr) *peer = sys::address_text(reinterpret_cast<sockaddr*>(&a));
    return c;
  }
  return Fd();
}

// Connects to host:port, again and again until the deadline (the listener may not be up yet).
Fd connect_tcp(const std::string& host, std::uint16_t port, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return Fd();
  Fd out;
  while (out.fd < 0 && Clock::now() < deadline) {
    for (addrinfo* ai = res; ai != nullptr && out.fd < 0; ai = ai->ai_next) {
      Fd s(socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
      if (s.fd < 0) continue;
      int rc = connect(s.fd, ai->ai_addr, ai->ai_addrlen);
      if (rc != 0 && errno == EINPROGRESS && wait_fd(s.fd, POLLOUT, deadline)) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
      }
      if (rc == 0) out = std::move(s);
    }
    if (out.fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  freeaddrinfo(res);
  if (out.fd >= 0) {
    int on = 1;
    setsockopt(out.fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }
  return out;
}

bool send_all(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!wait_fd(fd, POLLOUT, deadline)) return false;
    } else {
      return false;
    }
  }
  return true;
}

// One line (without its newline) from `fd`, with what follows it kept in `buf`.
std::optional<std::string> read_line(int fd, std::string& buf, Clock::time_point deadline) {
  for (;;) {
    if (auto nl = buf.find('\n'); nl != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      return line;
    }
    if (buf.size() > 512 || !wait_fd(fd, POLLIN, deadline)) return std::nullopt;
    char tmp[256];
    ssize_t n = recv(fd, tmp, sizeof tmp, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return std::nullopt;
    if (n > 0) buf.append(tmp, static_cast<std::size_t>(n));
  }
}

// Sends for `seconds` (or until the deadline), then ends the stream.
bool send_for(int fd, double seconds, Clock::time_point deadline) {
  static const std::string k_zeros(k_chunk, '\0');
  const auto until = std::min(deadline, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                           std::chrono::duration<double>(seconds)));
  while (Clock::now() < until) {
    ssize_t n = send(fd, k_zeros.data(), k_zeros.size(), MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    if (n < 0 && !wait_fd(fd, POLLOUT, until)) break;
  }
  return shutdown(fd, SHUT_WR) == 0;
}

// Reads to the end of the stream: Gbit/s from the first byte to the last.
std::optional<double> receive_rate(int fd, Clock::time_point deadline) {
  std::vector<char> buf(k_chunk);
  std::uint64_t bytes = 0;
  Clock::time_point first{}, last{};
  for (;;) {
    if (!wait_fd(fd, POLLIN, deadline)) return std::nullopt;
    ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return std::nullopt;
    }
    last = Clock::now();
    if (bytes == 0) first = last;
    bytes += static_cast<std::uint64_t>(n);
  }
  const double s = std::chrono::duration<double>(last - first).count();
  if (bytes == 0 || s <= 0) return std::nullopt;
  return static_cast<double>(bytes) * 8 / s / 1e9;
}

}  // namespace ddp::check::net
