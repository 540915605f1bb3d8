// One connection of the rendezvous: bounded reads and pending writes.
#include "ddp-check/rendezvous/connection_io.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ddp::check {

std::string seconds_text(Clock::duration d) {
  double s = std::chrono::duration<double>(d).count();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

// Reads what is there, until `c` holds `cap` bytes; false on EOF or error.
bool read_some(Conn& c, std::size_t cap) {
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

}  // namespace ddp::check
