// Socket-level queries for ddp-check's session: host name, which interface holds an address,
// an address as text. getifaddrs; no external command.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "libddp/sys/system.hpp"

namespace ddp::sys {
namespace {

bool same_address(const sockaddr* a, const sockaddr* b) {
  if (a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
  }
  if (a->sa_family == AF_INET6) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, sizeof(in6_addr)) == 0;
  }
  return false;
}

}  // namespace

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

std::optional<std::string> interface_of(const sockaddr* addr) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return std::nullopt;
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> guard(list, freeifaddrs);
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (i->ifa_addr && same_address(i->ifa_addr, addr)) return std::string(i->ifa_name);
  }
  return std::nullopt;
}

std::string address_text(const sockaddr* addr) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (addr->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr, buf, sizeof buf);
  } else if (addr->sa_family == AF_INET6) {
    const auto* a6 = reinterpret_cast<const sockaddr_in6*>(addr);
    if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {  // a dual-stack listener's IPv4 peer
      inet_ntop(AF_INET, &a6->sin6_addr.s6_addr[12], buf, sizeof buf);
      return buf;
    }
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr, buf, sizeof buf);
  } else {
    return "?";
  }
  return buf;
}

}  // namespace ddp::sys
