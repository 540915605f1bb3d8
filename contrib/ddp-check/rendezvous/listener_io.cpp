// Rank 0's side of the TCP phase: listen on MASTER_PORT, accept, admit or refuse each hello
// (admit.hpp), hold strangers to one bounded line and a deadline.
#include "ddp-check/rendezvous/listener_io.hpp"

#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ddp-check/net/socket_io.hpp"
#include "ddp-check/rendezvous/admit.hpp"
#include "ddp-check/rendezvous/auth.hpp"

namespace ddp::check {

Listener::Listener(const Identity& identity, const AuthConfig& auth_config)
    : id(identity), auth(auth_config) {}

Listener::~Listener() {
  net::close_fd(listener);
  for (auto& c : conns) net::close_fd(c.fd);
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
  // MASTER_ADDR may name any of this host's addresses: every address, either family.
  net::ListenError why;
  net::Fd fd = net::listen_any(id.master_port, SOMAXCONN, &why);
  if (fd.fd < 0 && why.at_listen) {
    return "cannot listen on port " + std::to_string(id.master_port) + ": " +
           net::errno_text(why.err);
  }
  if (fd.fd < 0) return bind_error(why.err);
  listener = fd.release();
  return std::nullopt;
}

std::string Listener::bind_error(int err) {
  std::string text = "rank 0 cannot listen on MASTER_PORT " + std::to_string(id.master_port) +
                     " on " + id.self.host + ": " + net::errno_text(err);
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
    std::string peer;
    net::Fd fd = net::accept_now(listener, &peer);
    if (fd.fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        accept_after = now + k_accept_pause;
        out->accept_trouble = "accepting connections failed (" + net::errno_text(errno) +
                              ") with " + std::to_string(conns.size()) + " connections open";
      }
      return;  // EAGAIN: nothing more waiting
    }
    Conn c;
    c.fd = fd.release();
    c.opened = now;
    c.peer = std::move(peer);
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
    if (c.closed) net::close_fd(c.fd);
    return c.closed;
  });
}

std::size_t Listener::admitted() const {
  return static_cast<std::size_t>(
      std::count_if(conns.begin(), conns.end(), [](const Conn& c) { return c.hello.has_value(); }));
}

}  // namespace ddp::check
