// The poll() loop behind Session: nonblocking connect with backoff, accept, bounded lines.
#include "ddp-check/session.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "ddp-check/admit.hpp"
#include "ddp-check/auth.hpp"
#include "ddp-check/interfaces.hpp"
#include "libddp/sys/system.hpp"

namespace ddp::check {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds k_first_backoff{50};
constexpr milliseconds k_max_backoff{1000};

std::string errno_text(int err) {
  return std::strerror(err);
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

int poll_timeout(Clock::time_point now, Clock::time_point until) {
  if (until <= now) return 0;
  auto ms = std::chrono::duration_cast<milliseconds>(until - now).count() + 1;
  return static_cast<int>(std::min<long long>(ms, 1000));
}

std::string seconds_text(Clock::duration d) {
  double s = std::chrono::duration<double>(d).count();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

// One TCP connection with bounded input and pending output.
struct Conn {
  int fd = -1;
  LineBuffer in;
  std::string out;
  std::optional<Hello> hello;  // rank 0: set once the hello is admitted
  std::string peer;
  Clock::time_point opened{};
  std::size_t received = 0;
  bool closed = false;
};

// Reads what is there, until `c` holds `cap` bytes; false on EOF or error.
bool read_some(Conn& c, std::size_t cap = SIZE_MAX) {
  char buf[4096];
  for (;;) {
    const std::size_t room = cap - std::min(cap, c.in.size());
    if (room == 0) return true;  // full: the caller takes its line or refuses the peer
    ssize_t n = recv(c.fd, buf, std::min(sizeof buf, room), 0);
    if (n > 0) {
      c.received += static_cast<std::size_t>(n);
      if (!c.in.feed(std::string_view(buf, static_cast<std::size_t>(n)))) return false;
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

// Writes what it can; false on error.
bool write_some(Conn& c) {
  while (!c.out.empty()) {
    ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  return true;
}

// A connection must deliver its hello this soon after it was accepted: a rank sends it at
// once, so only a stalled or hostile peer is cut off.
constexpr milliseconds k_hello_wait{3000};
// Connections still owing a hello; beyond this the oldest is dropped, so that a flood of idle
// connections cannot hold every descriptor.
constexpr std::size_t k_max_pending = 256;
// After accept() failed for want of descriptors, the listener rests this long instead of
// waking poll() again at once.
constexpr milliseconds k_accept_pause{100};
// Refused connections described in full; the rest are counted.
constexpr std::size_t k_max_described = 10;

}  // namespace

struct Session::State {
  Identity id;
  AuthConfig auth;
  Clock::time_point start = Clock::now();
  Clock::time_point deadline;
  std::string master_text;  // "ADDR:PORT" for messages

  // Client side (every rank).
  std::vector<sockaddr_storage> targets;
  std::vector<socklen_t> target_lens;
  std::size_t next_target = 0;
  Conn client;
  bool connecting = false;
  bool connected = false;
  Clock::time_point next_attempt = Clock::now();
  milliseconds backoff = k_first_backoff;
  unsigned attempts = 0;
  std::string last_error = "not tried yet";

  // Server side (rank 0).
  int listener = -1;
  std::vector<Conn> conns;
  Clock::time_point accept_after{};  // the listener rests until then (descriptor limit)
  std::size_t max_conns = 1024;      // connections rank 0 holds at most (descriptor limit)
  Exchange* out = nullptr;           // where run() collects refusals

  ~State() {
    close_fd(listener);
    close_fd(client.fd);
    for (auto& c : conns) close_fd(c.fd);
  }

  // MASTER_ADDR's addresses, through the plugin's bounded resolver: a resolver that does not
  // answer costs at most the time left before the deadline, never a hang.
  std::optional<std::string> resolve() {
    const auto left = std::chrono::duration<double>(deadline - Clock::now()).count();
    const auto bound = static_cast<unsigned>(std::clamp(std::ceil(left), 1.0, 3600.0));
    sys::Resolution found = sys::resolve_host(id.master_addr, bound, "--timeout");
    if (found.error) return "MASTER_ADDR: " + *found.error;
    for (const IpAddress& address : found.addresses) {
      sockaddr_storage s{};
      if (address.family == Family::ipv6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&s);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(id.master_port);
        std::memcpy(&a->sin6_addr, address.bytes.data(), 16);
        target_lens.push_back(sizeof *a);
      } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&s);
        a->sin_family = AF_INET;
        a->sin_port = htons(id.master_port);
        std::memcpy(&a->sin_addr, address.bytes.data(), 4);
        target_lens.push_back(sizeof *a);
      }
      targets.push_back(s);
    }
    return std::nullopt;
  }

  // A bound socket for `family` (dual-stack for IPv6), or -1 with errno set.
  int bound_socket(int family) {
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

  std::optional<std::string> listen_any() {
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

  std::string bind_error(int err) {
    std::string text = "rank 0 cannot listen on MASTER_PORT " + std::to_string(id.master_port) +
                       " on " + id.self.host + ": " + errno_text(err);
    if (err == EADDRINUSE) text += " (another process on this node holds the port)";
    return text;
  }

  void start_connect(Clock::time_point now) {
    const auto& target = targets[next_target % targets.size()];
    const socklen_t len = target_lens[next_target % targets.size()];
    ++next_target;
    ++attempts;
    client = Conn{};
    client.fd = socket(target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (client.fd < 0) {
      connect_failed(errno, now);
      return;
    }
    int one = 1;
    setsockopt(client.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(client.fd, reinterpret_cast<const sockaddr*>(&target), len) == 0) {
      connecting = true;  // finished at once (loopback): on_connected() runs after poll
    } else if (errno == EINPROGRESS) {
      connecting = true;
    } else {
      connect_failed(errno, now);
    }
  }

  void connect_failed(int err, Clock::time_point now) {
    last_error = errno_text(err);
    close_fd(client.fd);
    connecting = false;
    next_attempt = now + backoff;
    backoff = std::min(backoff * 2, k_max_backoff);
  }

  // Fills in the connection fields of this process's hello and signs it. An error is this
  // process's own fault (munged unreachable).
  std::optional<std::string> on_connected() {
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
  bool client_ready(short revents, bool master, Exchange& ex) {
    if (connecting) {
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(client.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
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
                       " while sending the hello: " + errno_text(errno);
      close_fd(client.fd);
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
  bool take_verdict(Exchange& ex) {
    auto line = client.in.next_line();
    if (!line) return false;
    auto verdict = parse_verdict(*line);
    if (verdict)
      ex.verdict = *verdict;
    else
      ex.local_fault = "rank 0 at " + master_text + " answered garbage: " + verdict.error().message;
    return true;
  }

  void refuse(Conn& c, const Hello* claimed, std::string_view why) {
    c.closed = true;
    ++out->refused_count;
    if (out->refused.size() < k_max_described)
      out->refused.push_back(describe_refusal(c.peer, claimed, why));
  }

  // Rank 0's judgement of one hello line: parse, binding, credential.
  void admit_line(Conn& c, const std::string& line) {
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
  void serve(Conn& c) {
    const bool open = read_some(c, k_max_line);
    if (auto line = c.in.next_line()) return admit_line(c, *line);
    if (c.in.overflowed() || c.in.size() >= k_max_line)
      return refuse(c, nullptr, "a line longer than " + std::to_string(k_max_line) + " bytes");
    if (open) return;
    if (c.received > 0) return refuse(c, nullptr, "closed the connection inside its hello");
    c.closed = true;  // connected and left without a byte: a port probe, nothing to report
  }

  void accept_all(Clock::time_point now) {
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
  void expire_pending(Clock::time_point now) {
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

  std::size_t admitted() const {
    return static_cast<std::size_t>(std::count_if(
        conns.begin(), conns.end(), [](const Conn& c) { return c.hello.has_value(); }));
  }

  // When the loop must wake up next, whatever poll() reports.
  Clock::time_point next_wake(bool master, Clock::time_point now, Clock::time_point until) const {
    Clock::time_point wake = until;
    if (!connected && client.fd < 0 && !targets.empty()) wake = std::min(wake, next_attempt);
    if (!master) return wake;
    if (accept_after > now) wake = std::min(wake, accept_after);
    for (const auto& c : conns) {
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
  const bool client_wants = client.fd >= 0 && (connecting || !client.out.empty() || !master);
  if (client_wants)
    fds.push_back(
        {client.fd, static_cast<short>(connecting || !client.out.empty() ? POLLOUT : POLLIN), 0});
  const bool listening = master && now >= accept_after;
  if (listening) fds.push_back({listener, POLLIN, 0});
  if (master) {
    for (auto& c : conns) {
      if (c.hello) continue;
      fds.push_back({c.fd, POLLIN, 0});
      polled.push_back(&c);
    }
  }
  int n = poll(fds.data(), fds.size(), poll_timeout(now, next_wake(master, now, until)));
  if (n < 0 && errno != EINTR) {
    ex.local_fault = std::string("poll: ") + errno_text(errno);
    return false;
  }
  if (n <= 0) return true;
  std::size_t at = 0;
  if (client_wants && fds[at++].revents && !client_ready(fds[at - 1].revents, master, ex))
    return master && !ex.local_fault;
  if (!master) return true;
  const bool accept_ready = listening && fds[at++].revents;
  for (std::size_t i = 0; i < polled.size(); ++i) {
    if (fds[at + i].revents) serve(*polled[i]);
  }
  if (accept_ready) accept_all(Clock::now());
  return true;
}

Exchange Session::State::run_master(Clock::time_point collect_until) {
  Exchange ex;
  out = &ex;
  if (auto err = resolve()) ex.self_unreachable = *err;
  if (auto err = listen_any()) {
    ex.local_fault = *err;
    return ex;
  }
  const std::size_t world = id.self.world_size;
  while (Clock::now() < collect_until && admitted() < world) {
    if (!targets.empty() && client.fd < 0 && !connected && Clock::now() >= next_attempt)
      start_connect(Clock::now());
    if (!poll_once(true, collect_until, ex)) break;
    expire_pending(Clock::now());
  }
  for (const auto& c : conns) {
    if (c.hello) ex.hellos.push_back(*c.hello);
  }
  if (!connected && !ex.self_unreachable) {
    ex.self_unreachable = "rank 0 (" + id.self.host + ") cannot reach itself at " + master_text +
                          ": " + last_error + " (does MASTER_ADDR name this host?)";
  }
  close_fd(listener);
  out = nullptr;
  return ex;
}

Exchange Session::State::run_worker() {
  Exchange ex;
  if (auto err = resolve()) {
    ex.local_fault = *err;
    return ex;
  }
  while (Clock::now() < deadline) {
    if (client.fd < 0 && !connected && Clock::now() >= next_attempt) start_connect(Clock::now());
    if (!poll_once(false, deadline, ex)) return ex;
  }
  const auto waited = seconds_text(Clock::now() - start);
  if (!connected) {
    ex.local_fault = "cannot reach the master at " + master_text +
                     " (MASTER_ADDR:MASTER_PORT) within " + waited + " after " +
                     std::to_string(attempts) + " attempts: " + last_error +
                     "; is rank 0 running, and is MASTER_ADDR reachable from " + id.self.host + "?";
  } else {
    ex.local_fault = "connected to rank 0 at " + master_text + " but got no verdict within " +
                     waited + " (rank 0 still waiting for other ranks, or hung)";
  }
  return ex;
}

Session::Session(Identity identity, AuthConfig auth, Clock::time_point deadline)
    : state_(std::make_unique<State>()) {
  state_->id = std::move(identity);
  state_->auth = std::move(auth);
  state_->deadline = deadline;
  const bool v6 = state_->id.master_addr.find(':') != std::string::npos;
  state_->master_text = (v6 ? "[" + state_->id.master_addr + "]" : state_->id.master_addr) + ":" +
                        std::to_string(state_->id.master_port);
}

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
  for (auto& c : s.conns) {
    if (c.hello) c.out += line;
  }
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Conn*> pending;
    for (auto& c : s.conns) {
      if (c.fd < 0 || c.out.empty()) continue;
      if (!write_some(c)) {
        close_fd(c.fd);
        continue;
      }
      if (!c.out.empty()) {
        fds.push_back({c.fd, POLLOUT, 0});
        pending.push_back(&c);
      }
    }
    const auto now = Clock::now();
    if (fds.empty() || now >= until) return;
    if (poll(fds.data(), fds.size(), poll_timeout(now, until)) < 0 && errno != EINTR) return;
  }
}

Exchange Session::await_verdict() {
  State& s = *state_;
  Exchange result;
  bool open = s.client.fd >= 0;
  for (;;) {
    if (s.take_verdict(result)) return result;
    if (!open) {
      result.local_fault =
          "rank 0 at " + s.master_text + " closed the connection without a final verdict";
      return result;
    }
    const auto now = Clock::now();
    if (now >= s.deadline) {
      result.local_fault = "no final verdict from rank 0 at " + s.master_text + " within " +
                           seconds_text(now - s.start);
      return result;
    }
    pollfd p{s.client.fd, POLLIN, 0};
    if (poll(&p, 1, poll_timeout(now, s.deadline)) > 0) open = read_some(s.client);
  }
}

}  // namespace ddp::check
