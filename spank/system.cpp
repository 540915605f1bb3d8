#include "system.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace ddp::sys {
namespace {

std::optional<IpAddress> from_sockaddr(const sockaddr* sa) {
  if (sa == nullptr) return std::nullopt;
  IpAddress out;
  if (sa->sa_family == AF_INET) {
    out.family = Family::ipv4;
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    std::memcpy(out.bytes.data(), &in->sin_addr, 4);
    return out;
  }
  if (sa->sa_family == AF_INET6) {
    out.family = Family::ipv6;
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    std::memcpy(out.bytes.data(), &in6->sin6_addr, 16);
    return out;
  }
  return std::nullopt;
}

// Closes a descriptor on every path out of test_bind().
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<std::vector<IpAddress>> resolve_host(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &list); rc != 0) {
    return fail("cannot resolve \"" + name + "\": " + ::gai_strerror(rc));
  }
  std::vector<IpAddress> out;
  for (const addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    if (auto address = from_sockaddr(ai->ai_addr);
        address && std::find(out.begin(), out.end(), *address) == out.end()) {
      out.push_back(*address);
    }
  }
  ::freeaddrinfo(list);
  return out;
}

std::vector<IpAddress> local_addresses() {
  std::vector<IpAddress> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (auto address = from_sockaddr(ifa->ifa_addr)) out.push_back(*address);
  }
  ::freeifaddrs(list);
  return out;
}

Result<void> test_bind(const IpAddress& address, std::uint16_t port) {
  const bool v6 = address.family == Family::ipv6;
  FdCloser sock{::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (sock.fd < 0) return fail(std::string("socket(): ") + std::strerror(errno));
  // Same flag as PyTorch's TCPStore server, so a port in TIME_WAIT is not reported as taken.
  int one = 1;
  ::setsockopt(sock.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(port);
    std::memcpy(&sa.sin6_addr, address.bytes.data(), 16);
    rc = ::bind(sock.fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
  } else {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    std::memcpy(&sa.sin_addr, address.bytes.data(), 4);
    rc = ::bind(sock.fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
  }
  if (rc != 0) {
    return fail("cannot bind " + address.to_string() + ":" + std::to_string(port) + ": " +
                std::strerror(errno));
  }
  return {};
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

std::optional<PortRange> ephemeral_range() {
  auto text = read_file("/proc/sys/net/ipv4/ip_local_port_range");
  if (!text) return std::nullopt;
  auto range = parse_ephemeral_range(*text);
  if (!range) return std::nullopt;
  return *range;
}

}  // namespace ddp::sys
