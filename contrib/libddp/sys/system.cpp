#include "libddp/sys/system.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>

#include "libddp/util/text.hpp"

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

namespace {

std::vector<IpAddress> unique_addresses(const addrinfo* list) {
  std::vector<IpAddress> out;
  for (const addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    if (auto address = from_sockaddr(ai->ai_addr);
        address && std::find(out.begin(), out.end(), *address) == out.end()) {
      out.push_back(*address);
    }
  }
  return out;
}

// One asynchronous lookup: what glibc's helper thread reads must outlive an abandoned request.
struct Lookup {
  std::string name;
  addrinfo hints{};
  gaicb request{};
};

// Waits for `lookup` until `timeout_seconds` have passed: its result, or EAI_INPROGRESS at the
// bound.
int wait_for(Lookup& lookup, unsigned timeout_seconds) {
  timespec deadline{};
  ::clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += static_cast<time_t>(timeout_seconds);
  const gaicb* requests[] = {&lookup.request};
  while (true) {
    int rc = ::gai_error(&lookup.request);
    if (rc != EAI_INPROGRESS) return rc;
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    const long long left_ns =
        (deadline.tv_sec - now.tv_sec) * 1000000000LL + (deadline.tv_nsec - now.tv_nsec);
    if (left_ns <= 0) return EAI_INPROGRESS;
    const timespec left{static_cast<time_t>(left_ns / 1000000000LL),
                        static_cast<long>(left_ns % 1000000000LL)};
    ::gai_suspend(requests, 1, &left);  // EAI_INTR and EAI_AGAIN alike: check again
  }
}

}  // namespace

Resolution resolve_host(const std::string& name, unsigned timeout_seconds,
                        std::string_view bound_by) {
  auto lookup = std::make_unique<Lookup>();
  lookup->name = name;
  lookup->hints.ai_family = AF_UNSPEC;
  lookup->hints.ai_socktype = SOCK_STREAM;
  lookup->request.ar_name = lookup->name.c_str();
  lookup->request.ar_request = &lookup->hints;
  gaicb* list[] = {&lookup->request};
  Resolution out;
  if (int rc = ::getaddrinfo_a(GAI_NOWAIT, list, 1, nullptr); rc != 0) {
    out.error = "cannot resolve " + text::quote(name) + ": " + ::gai_strerror(rc);
    return out;
  }
  int rc = wait_for(*lookup, timeout_seconds);
  if (rc == EAI_INPROGRESS) {
    const int cancelled = ::gai_cancel(&lookup->request);
    // glibc's thread may still own the request: leave it the memory (one small block per
    // abandoned lookup, in a slurmstepd that ends with the step) rather than free it under it.
    if (cancelled == EAI_NOTCANCELED) (void)lookup.release();
    if (cancelled == EAI_ALLDONE) rc = ::gai_error(&lookup->request);
  }
  if (rc != 0) {
    out.unknown = rc == EAI_NONAME || rc == EAI_NODATA;
    out.error = "cannot resolve " + text::quote(name) + ": " +
                (rc == EAI_INPROGRESS || rc == EAI_CANCELED
                     ? "no answer within " + text::decimal(timeout_seconds) + " s (" +
                           std::string(bound_by) + "); check this node's DNS servers"
                     : std::string(::gai_strerror(rc)));
    return out;
  }
  out.addresses = unique_addresses(lookup->request.ar_result);
  ::freeaddrinfo(lookup->request.ar_result);
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

Result<std::string> read_file(const std::string& path, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer must not wait for one; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return fail("cannot read " + text::quote(path) + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("cannot read " + text::quote(path) + ": not a regular file");
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      if (n == 0) return out;
      return fail("cannot read " + text::quote(path) + ": " + std::strerror(error));
    }
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) {
      ::close(fd);
      return fail("cannot read " + text::quote(path) + ": larger than " +
                  text::plural(max_bytes, "byte"));
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
}

std::optional<PortRange> ephemeral_range() {
  auto text = read_file("/proc/sys/net/ipv4/ip_local_port_range");
  if (!text) return std::nullopt;
  auto range = parse_ephemeral_range(*text);
  if (!range) return std::nullopt;
  return *range;
}

std::vector<InterfaceAddress> interface_addresses() {
  std::vector<InterfaceAddress> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_name == nullptr) continue;
    if (auto address = from_sockaddr(ifa->ifa_addr)) out.push_back({ifa->ifa_name, *address});
  }
  ::freeifaddrs(list);
  return out;
}

Result<IpAddress> route_source(const IpAddress& destination) {
  const bool v6 = destination.family == Family::ipv6;
  FdCloser sock{::socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)};
  if (sock.fd < 0) return fail(std::string("socket(): ") + std::strerror(errno));
  // Port 9 (discard): any port does; connect() on a UDP socket sends nothing.
  sockaddr_storage target{};
  socklen_t target_len = 0;
  if (v6) {
    auto* sa = reinterpret_cast<sockaddr_in6*>(&target);
    sa->sin6_family = AF_INET6;
    sa->sin6_port = htons(9);
    std::memcpy(&sa->sin6_addr, destination.bytes.data(), 16);
    target_len = sizeof(sockaddr_in6);
  } else {
    auto* sa = reinterpret_cast<sockaddr_in*>(&target);
    sa->sin_family = AF_INET;
    sa->sin_port = htons(9);
    std::memcpy(&sa->sin_addr, destination.bytes.data(), 4);
    target_len = sizeof(sockaddr_in);
  }
  if (::connect(sock.fd, reinterpret_cast<const sockaddr*>(&target), target_len) != 0) {
    return fail("no route to " + destination.to_string() + ": " + std::strerror(errno));
  }
  sockaddr_storage local{};
  socklen_t local_len = sizeof local;
  if (::getsockname(sock.fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) {
    return fail(std::string("getsockname(): ") + std::strerror(errno));
  }
  auto source = from_sockaddr(reinterpret_cast<const sockaddr*>(&local));
  if (!source)
    return fail("getsockname() gave no IP address for the route to " + destination.to_string());
  return *source;
}

unsigned affinity_cpus() {
  // Start at the kernel's usual mask size and double while the kernel says the set is too
  // small (EINVAL), up to 2^20 CPUs.
  for (int cpus = 1024; cpus <= (1 << 20); cpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(cpus);
    if (set == nullptr) return 0;
    const std::size_t size = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(size, set);
    const int rc = ::sched_getaffinity(0, size, set);
    const int error = errno;
    const unsigned count = rc == 0 ? static_cast<unsigned>(CPU_COUNT_S(size, set)) : 0;
    CPU_FREE(set);
    if (rc == 0) return count;
    if (error != EINVAL) return 0;
  }
  return 0;
}

std::optional<std::uint32_t> nvidia_gpus() {
  DIR* dir = ::opendir("/proc/driver/nvidia/gpus");
  if (dir == nullptr) return std::nullopt;
  std::uint32_t count = 0;
  while (const dirent* entry = ::readdir(dir)) {
    // One directory per GPU, named by its PCI bus id ("0000:07:00.0").
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count;
}

// The interface this node's route to MASTER_ADDR leaves through. On the rank-0 node MASTER_ADDR
// is local, and the kernel's answer is the interface that holds it.
Result<EnvList> socket_ifname_for(const std::string& master_addr, const AddressPolicy& policy,
                                  unsigned resolve_timeout) {
  auto destination = IpAddress::parse(master_addr);
  if (!destination) {
    // A host name: the address the same rule as addr=ip picks among the name's addresses.
    Resolution resolution = resolve_host(master_addr, resolve_timeout);
    if (resolution.error) return fail("socket_ifname=auto: " + *resolution.error);
    destination = choose_address(resolution.addresses, policy, master_addr);
    if (!destination) return fail("socket_ifname=auto: " + destination.error().message);
  }
  auto source = route_source(*destination);
  if (!source) {
    return fail("socket_ifname=auto: MASTER_ADDR=" + text::quote(master_addr) + ": " +
                source.error().message + " from this node; check its routes to the head node");
  }
  const std::vector<InterfaceAddress> interfaces = interface_addresses();
  auto name = interface_for_route(*source, interfaces, master_addr);
  if (!name) return fail(name.error().message);
  return socket_ifname_environment(*name);
}

std::optional<std::string> random_hex(std::size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  if (getrandom(raw.data(), raw.size(), 0) != static_cast<ssize_t>(raw.size())) return std::nullopt;
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : raw) {
    out += k_hex[b >> 4];
    out += k_hex[b & 15];
  }
  return out;
}

}  // namespace ddp::sys
