// ddp-check's one socket toolkit: listen, resolve (bounded), connect, accept, send, receive.
#include "ddp-check/net/socket_io.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
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

std::string errno_text(int err) {
  return std::strerror(err);
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

int poll_timeout(Clock::time_point now, Clock::time_point until) {
  if (until <= now) return 0;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count() + 1;
  return static_cast<int>(std::min<long long>(ms, 1000));
}

namespace {

// A socket of `family` bound to its wildcard address and `port` (dual-stack for IPv6), or -1
// with errno set.
int bound_wildcard(int family, std::uint16_t port) {
  int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage any{};
  socklen_t len = 0;
  if (family == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    auto* a = reinterpret_cast<sockaddr_in6*>(&any);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_any;
    a->sin6_port = htons(port);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&any);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    a->sin_port = htons(port);
    len = sizeof *a;
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&any), len) != 0) {
    int err = errno;
    close_fd(fd);
    errno = err;
  }
  return fd;
}

Endpoint endpoint_of(const IpAddress& address, std::uint16_t port) {
  Endpoint e;
  if (address.family == Family::ipv6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&e.addr);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    std::memcpy(&a->sin6_addr, address.bytes.data(), 16);
    e.len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&e.addr);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    std::memcpy(&a->sin_addr, address.bytes.data(), 4);
    e.len = sizeof *a;
  }
  return e;
}

}  // namespace

// Dual-stack wildcard, as torch.distributed's TCPStore does: a peer may reach any of this
// host's addresses. IPv4 only when the kernel has no IPv6.
Fd listen_any(std::uint16_t port, int backlog, ListenError* why) {
  int fd = bound_wildcard(AF_INET6, port);
  if (fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL)) {
    fd = bound_wildcard(AF_INET, port);
  }
  if (fd < 0) {
    if (why != nullptr) *why = {errno, false};
    return Fd();
  }
  if (listen(fd, backlog) != 0) {
    if (why != nullptr) *why = {errno, true};
    close_fd(fd);
    return Fd();
  }
  return Fd(fd);
}

std::uint16_t port_of(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  return 0;
}

Fd accept_now(int lfd, std::string* peer) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  Fd c(accept4(lfd, reinterpret_cast<sockaddr*>(&a), &len, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (c.fd >= 0 && peer != nullptr) *peer = sys::address_text(reinterpret_cast<sockaddr*>(&a));
  return c;
}

Fd accept_until(int lfd, Clock::time_point deadline, std::string* peer) {
  while (wait_fd(lfd, POLLIN, deadline)) {
    Fd c = accept_now(lfd, peer);
    if (c.fd >= 0) return c;
  }
  return Fd();
}

// Through ddp_sys's resolver, the plugin's: a resolver that does not answer costs at most the
// time left before the deadline, never a hang.
Result<std::vector<Endpoint>> resolve(const std::string& host, std::uint16_t port,
                                      Clock::time_point deadline, std::string_view bound_by) {
  const auto left = std::chrono::duration<double>(deadline - Clock::now()).count();
  const auto bound = static_cast<unsigned>(std::clamp(std::ceil(left), 1.0, 3600.0));
  sys::Resolution found = sys::resolve_host(host, bound, bound_by);
  if (found.error) return fail(*found.error);
  std::vector<Endpoint> out;
  for (const IpAddress& address : found.addresses) out.push_back(endpoint_of(address, port));
  return out;
}

Fd connect_start(const Endpoint& to) {
  Fd s(socket(to.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (s.fd < 0) return s;
  int on = 1;
  setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  if (connect(s.fd, reinterpret_cast<const sockaddr*>(&to.addr), to.len) == 0 ||
      errno == EINPROGRESS) {
    return s;
  }
  const int err = errno;
  s = Fd();
  errno = err;
  return s;
}

int connect_result(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

// Again and again until the deadline: the listener may not be up yet.
Fd connect_until(const std::vector<Endpoint>& targets, Clock::time_point deadline) {
  while (Clock::now() < deadline) {
    for (const Endpoint& to : targets) {
      Fd s = connect_start(to);
      if (s.fd >= 0 && wait_fd(s.fd, POLLOUT, deadline) && connect_result(s.fd) == 0) return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Fd();
}

Fd connect_tcp(const std::string& host, std::uint16_t port, Clock::time_point deadline) {
  auto targets = resolve(host, port, deadline);
  if (!targets) return Fd();
  return connect_until(*targets, deadline);
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
