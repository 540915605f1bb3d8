// Rank 0's side of the TCP phase: listen on MASTER_PORT, accept, admit or refuse each hello
// (admit.hpp), hold strangers to one bounded line and a deadline.
#include "ddp-check/rendezvous/listener_io.hpp"

#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ddp-check/rendezvous/admit.hpp"
#include "ddp-check/rendezvous/auth.hpp"
#include "libddp/sys/system.hpp"

namespace ddp::check {

Listener::Listener(const Identity& identity, const AuthConfig& auth_config)
    : id(identity), auth(auth_config) {}

Listener::~Listener() {
  close_fd(listener);
  for (auto& c : conns) close_fd(c.fd);
}

// A bound socket for `family` (dual-stack for IPv6), or -1 with errno set.
int Listener::bound_socket(int family) {
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
    a->sin6_port = htons(id.master_port);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&any);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    a->sin_port = htons(id.master_port);
    len = sizeof *a;
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&any), len) != 0) {
    int err = errno;
    close_fd(fd);
    errno = err;
  }
  return fd;
}

std::optional<std::string> Listener::listen_any() {
  // Allow one descriptor per rank of a large world.
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  // Keep descriptors for the listener, munged's socket and the rest of the process: a flood
  // of connections then waits in the kernel's backlog instead of starving the decode.
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    max_conns = lim.rlim_cur > 64 ? static_cast<std::size_t>(lim.rlim_cur) - 32 : 32;
  }
  // Dual-stack wildcard, as torch.distributed's TCPStore does: MASTER_ADDR may name any of
  // this host's addresses. IPv4 only when the kernel has no IPv6.
  int fd = bound_socket(AF_INET6);
  if (fd < 0 && errno != EAFNOSUPPORT && errno != EADDRNOTAVAIL) return bind_error(errno);
  if (fd < 0) fd = bound_socket(AF_INET);
  if (fd < 0) return bind_error(errno);
  if (listen(fd, SOMAXCONN) != 0) {
    int err = errno;
    close_fd(fd);
    return "cannot listen on port " + std::to_string(id.master_port) + ": " + errno_text(err);
  }
  listener = fd;
  return std::nullopt;
}

std::string Listener::bind_error(int err) {
  std::string text = "rank 0 cannot listen on MASTER_PORT " + std::to_string(id.master_port) +
                     " on " + id.self.host + ": " + errno_text(err);
  if (err == EADDRINUSE) text += " (another process on this node holds the port)";
  return text;
}

void Listener::refuse(Conn& c, const Hello* claimed, std::string_view why) {
  c.closed = true;
  ++out->refused_count;
  if (out->refused.size() < k_max_described)
    out->refused.push_back(describe_refusal(c.peer, claimed, why));
}

// Rank 0's judgement of one hello line: parse, binding, credential.
void Listener::admit_line(Conn& c, const std::string& line) {
  auto hello = parse_hello(line);
  if (!hello) return refuse(c, nullptr, hello.error().message);
  if (auto why = binding_refusal(*hello, {id.self.job, id.self.step, id.self.het, id.master_port},
                                 auth.mode))
    return refuse(c, &*hello, *why);
  if (auth.mode == AuthMode::munge) {
    auto decoded = munge::decode(hello->cred, auth.munge_socket);
    if (auto why = credential_refusal(decoded, signed_part(line), auth.uid))
      return refuse(c, &*hello, *why);
  }
  c.hello = std::move(*hello);
}

// Reads a pending connection: admits or refuses its hello, or drops it when it closed.
// Before admission a peer is a stranger: it may make rank 0 hold one hello line, no more,
// however many lines it streams.
void Listener::serve(Conn& c) {
  const bool open = read_some(c, k_max_line);
  if (auto line = c.in.next_line()) return admit_line(c, *line);
  if (c.in.overflowed() || c.in.size() >= k_max_line)
    return refuse(c, nullptr, "a line longer than " + std::to_string(k_max_line) + " bytes");
  if (open) return;
  if (c.received > 0) return refuse(c, nullptr, "closed the connection inside its hello");
  c.closed = true;  // connected and left without a byte: a port probe, nothing to report
}

void Listener::accept_all(Clock::time_point now) {
  for (;;) {
    if (conns.size() >= max_conns) {
      accept_after = now + k_accept_pause;
      out->accept_trouble = "rank 0 held " + std::to_string(conns.size()) +
                            " connections, all its descriptors allow; more waited in the backlog";
      return;
    }
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    int fd =
        accept4(listener, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        accept_after = now + k_accept_pause;
        out->accept_trouble = "accepting connections failed (" + errno_text(errno) + ") with " +
                              std::to_string(conns.size()) + " connections open";
      }
      return;  // EAGAIN: nothing more waiting
    }
    Conn c;
    c.fd = fd;
    c.opened = now;
    c.peer = sys::address_text(reinterpret_cast<sockaddr*>(&peer));
    conns.push_back(std::move(c));
    serve(conns.back());  // a rank's hello usually came with the connection: admit it now
  }
}

// Drops connections that owe their hello too long, and the oldest beyond k_max_pending.
void Listener::expire_pending(Clock::time_point now) {
  std::size_t pending = 0;
  for (auto it = conns.rbegin(); it != conns.rend(); ++it) {
    if (it->hello || it->closed) continue;
    if (now - it->opened >= k_hello_wait) {
      refuse(*it, nullptr, "sent no complete hello within " + seconds_text(k_hello_wait));
    } else if (++pending > k_max_pending) {
      refuse(*it, nullptr,
             "one of more than " + std::to_string(k_max_pending) +
                 " connections owing a hello at once (dropped the oldest)");
    }
  }
  std::erase_if(conns, [](Conn& c) {
    if (c.closed) close_fd(c.fd);
    return c.closed;
  });
}

std::size_t Listener::admitted() const {
  return static_cast<std::size_t>(
      std::count_if(conns.begin(), conns.end(), [](const Conn& c) { return c.hello.has_value(); }));
}

}  // namespace ddp::check
