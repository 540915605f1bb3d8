// The poll() loop behind Session: nonblocking connect with backoff, accept, bounded lines.
#include "session.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "interfaces.hpp"
#include "system.hpp"

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
  std::optional<Hello> hello;
  std::string peer;
  bool closed = false;
};

// Reads what is there; false on EOF or error.
bool read_some(Conn& c) {
  char buf[4096];
  for (;;) {
    ssize_t n = recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
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

}  // namespace

struct Session::State {
  Identity id;
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

  ~State() {
    close_fd(listener);
    close_fd(client.fd);
    for (auto& c : conns) close_fd(c.fd);
  }

  std::optional<std::string> resolve() {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    std::string port = std::to_string(id.master_port);
    int rc = getaddrinfo(id.master_addr.c_str(), port.c_str(), &hints, &found);
    if (rc != 0) return "cannot resolve MASTER_ADDR " + id.master_addr + ": " + gai_strerror(rc);
    for (addrinfo* a = found; a; a = a->ai_next) {
      sockaddr_storage s{};
      std::memcpy(&s, a->ai_addr, a->ai_addrlen);
      targets.push_back(s);
      target_lens.push_back(a->ai_addrlen);
    }
    freeaddrinfo(found);
    return std::nullopt;
  }

  std::optional<std::string> listen_any() {
    // Allow one descriptor per rank of a large world.
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
      lim.rlim_cur = lim.rlim_max;
      setrlimit(RLIMIT_NOFILE, &lim);
    }
    // Dual-stack wildcard, as torch.distributed's TCPStore does: MASTER_ADDR may name any of
    // this host's addresses. IPv4 only when the kernel has no IPv6.
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1, zero = 0;
    if (fd >= 0) {
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_addr = in6addr_any;
      a.sin6_port = htons(id.master_port);
      if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        int err = errno;
        close_fd(fd);
        if (err != EAFNOSUPPORT && err != EADDRNOTAVAIL) return bind_error(err);
      }
    }
    if (fd < 0) {
      fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) return "cannot create a socket: " + errno_text(errno);
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_ANY);
      a.sin_port = htons(id.master_port);
      if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        int err = errno;
        close_fd(fd);
        return bind_error(err);
      }
    }
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
      on_connected();
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

  void on_connected() {
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
    client.out = format_hello(id.self);
  }

  void accept_all() {
    for (;;) {
      sockaddr_storage peer{};
      socklen_t len = sizeof peer;
      int fd =
          accept4(listener, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or out of descriptors: poll tells us again
      Conn c;
      c.fd = fd;
      c.peer = sys::address_text(reinterpret_cast<sockaddr*>(&peer));
      conns.push_back(std::move(c));
    }
  }
};

Session::Session(Identity identity, Clock::time_point deadline)
    : state_(std::make_unique<State>()) {
  state_->id = std::move(identity);
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
  State& s = *state_;
  Exchange result;
  const bool master = s.id.is_master();
  if (auto err = s.resolve()) {
    result.local_fault = *err;
    if (!master) return result;
  }
  if (master) {
    if (auto err = s.listen_any()) {
      result.local_fault = *err;
      return result;
    }
  }
  std::uint64_t needed = s.id.self.world_size;
  std::vector<std::string> garbage_notes;

  for (;;) {
    const auto now = Clock::now();
    if (!master && result.verdict) break;
    if (now >= (master ? collect_until : s.deadline)) break;
    if (master) {
      std::uint64_t arrived = 0;
      for (const auto& c : s.conns) {
        if (c.hello) {
          ++arrived;
          needed = std::max<std::uint64_t>(needed, c.hello->world_size);
        }
      }
      if (arrived >= needed) break;
    }
    if (!s.targets.empty() && s.client.fd < 0 && !s.connected && now >= s.next_attempt) {
      s.start_connect(now);
    }

    std::vector<pollfd> fds;
    if (s.client.fd >= 0) {
      short events = s.connecting || !s.client.out.empty() ? POLLOUT : POLLIN;
      if (master && s.connected && s.client.out.empty()) events = 0;  // rank 0 reads no verdict
      fds.push_back({s.client.fd, events, 0});
    }
    const std::size_t first_conn = fds.size() + (master ? 1 : 0);
    if (master) {
      fds.push_back({s.listener, POLLIN, 0});
      for (const auto& c : s.conns) fds.push_back({c.fd, POLLIN, 0});
    }
    auto wake = master ? collect_until : s.deadline;
    if (!s.connected && s.client.fd < 0 && !s.targets.empty())
      wake = std::min(wake, s.next_attempt);
    int n = poll(fds.data(), fds.size(), poll_timeout(now, wake));
    if (n < 0 && errno != EINTR) {
      result.local_fault = std::string("poll: ") + errno_text(errno);
      return result;
    }
    if (n <= 0) continue;

    // Client side.
    if (s.client.fd >= 0 && fds[0].revents) {
      const short rev = fds[0].revents;
      if (s.connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(s.client.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0)
          s.connect_failed(err, Clock::now());
        else
          s.on_connected();
      }
      if (s.connected && s.client.fd >= 0 && !s.client.out.empty() && !write_some(s.client)) {
        result.local_fault = "lost the connection to rank 0 at " + s.master_text +
                             " while sending the hello: " + errno_text(errno);
        if (!master) return result;
        close_fd(s.client.fd);
      }
      if (!master && s.connected && (rev & (POLLIN | POLLHUP | POLLERR))) {
        bool open = read_some(s.client);
        if (auto line = s.client.in.next_line()) {
          auto verdict = parse_verdict(*line);
          if (verdict)
            result.verdict = *verdict;
          else
            result.local_fault =
                "rank 0 at " + s.master_text + " answered garbage: " + verdict.error().message;
          if (!result.verdict) return result;
          continue;
        }
        if (!open || s.client.in.overflowed()) {
          result.local_fault = "rank 0 at " + s.master_text +
                               " closed the connection without a verdict (it gave up already, "
                               "or crashed; see rank 0's output)";
          return result;
        }
      }
    }

    // Server side.
    if (master) {
      for (std::size_t i = 0; i < s.conns.size(); ++i) {
        auto& c = s.conns[i];
        if (!fds[first_conn + i].revents || c.hello) continue;
        bool open = read_some(c);
        if (auto line = c.in.next_line()) {
          auto hello = parse_hello(*line);
          if (hello) {
            c.hello = *hello;
          } else {
            if (garbage_notes.size() < 3)
              garbage_notes.push_back(c.peer + ": " + hello.error().message);
            c.closed = true;
          }
        } else if (!open || c.in.overflowed()) {
          if (c.in.overflowed() && garbage_notes.size() < 3) {
            garbage_notes.push_back(c.peer + ": a line longer than " + std::to_string(k_max_line) +
                                    " bytes");
          }
          c.closed = true;
        }
      }
      if (fds[first_conn - 1].revents) s.accept_all();
      std::erase_if(s.conns, [](Conn& c) {
        if (c.closed) close_fd(c.fd);
        return c.closed;
      });
    }
  }

  if (master) {
    for (const auto& c : s.conns) {
      if (c.hello) result.hellos.push_back(*c.hello);
    }
    if (!s.connected) {
      result.self_unreachable = "rank 0 (" + s.id.self.host + ") cannot reach itself at " +
                                s.master_text + ": " + s.last_error +
                                " (does MASTER_ADDR name this host?)";
    }
    for (const auto& note : garbage_notes) {
      std::fprintf(stderr, "ddp-check: warning: ignored a connection that sent no hello: %s\n",
                   note.c_str());
    }
    close_fd(s.listener);
  } else if (!result.verdict && !result.local_fault) {
    const auto waited = seconds_text(Clock::now() - s.start);
    if (!s.connected) {
      result.local_fault =
          "cannot reach the master at " + s.master_text + " (MASTER_ADDR:MASTER_PORT) within " +
          waited + " after " + std::to_string(s.attempts) + " attempts: " + s.last_error +
          "; is rank 0 running, and is MASTER_ADDR reachable from " + s.id.self.host + "?";
    } else {
      result.local_fault = "connected to rank 0 at " + s.master_text +
                           " but got no verdict within " + waited +
                           " (rank 0 still waiting for other ranks, or hung)";
    }
  }
  return result;
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
    if (auto line = s.client.in.next_line()) {
      auto verdict = parse_verdict(*line);
      if (verdict)
        result.verdict = *verdict;
      else
        result.local_fault =
            "rank 0 at " + s.master_text + " answered garbage: " + verdict.error().message;
      return result;
    }
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
