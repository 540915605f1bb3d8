// The one operating-system layer of the plugin and ddp-check: name resolution, the node's own
// addresses and routes, affinity, a test bind, and reading small files. No spank.h, no hwloc,
// no external command, no fork.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libddp/core/address.hpp"
#include "libddp/core/port.hpp"
#include "libddp/core/tuning.hpp"
#include "libddp/util/result.hpp"

namespace ddp::sys {

// What the resolver answered for one name.
struct Resolution {
  std::vector<IpAddress> addresses;  // resolver order, duplicates removed
  std::optional<std::string> error;  // set when resolution failed, naming the name and why
  bool unknown = false;              // the resolver says the name does not exist
};

// Resolves `name` (getaddrinfo_a), waiting at most `timeout_seconds`; at the bound the error
// says so and names what sets the bound (`bound_by`: the plugin's resolve_timeout=, ddp-check's
// --timeout). A lookup still running then is abandoned to glibc.
Resolution resolve_host(const std::string& name, unsigned timeout_seconds,
                        std::string_view bound_by = "resolve_timeout= in plugstack.conf");

// Addresses configured on this node's interfaces (getifaddrs), loopback included.
std::vector<IpAddress> local_addresses();

// Binds a TCP socket to address:port and closes it; the error says who holds what.
Result<void> test_bind(const IpAddress& address, std::uint16_t port);

// Whole contents of a small regular file, at most `max_bytes`. Anything else is an error that
// comes at once: a FIFO (never waited on), a device such as /dev/zero (never read), a
// directory, a file that grew past the cap.
Result<std::string> read_file(const std::string& path, std::size_t max_bytes = 1u << 20);

// The kernel's ephemeral port range, if /proc tells it.
std::optional<PortRange> ephemeral_range();

// Every address of every interface, with the interface's name (getifaddrs), loopback included.
std::vector<InterfaceAddress> interface_addresses();

// The local address the kernel would send from to reach `destination`: a UDP socket is
// connected (which only consults the routing table; no packet leaves) and asked getsockname().
Result<IpAddress> route_source(const IpAddress& destination);

// CPUs in the calling thread's affinity mask (sched_getaffinity), 0 if unknown. The CPU set
// is sized at run time: a fixed cpu_set_t holds 1024 CPUs and fails on larger nodes.
unsigned affinity_cpus();

// gethostname(), "?" if it fails.
std::string hostname();

// The interface that holds local address `addr` (getifaddrs), nullopt if none does.
std::optional<std::string> interface_of(const sockaddr* addr);

// "10.0.0.5" / "fe80::1" for a socket address; an IPv4-mapped IPv6 address as IPv4.
std::string address_text(const sockaddr* addr);

// What socket_ifname=auto exports on this node (the plugin calls this, and ddp-check
// --topology prints it): NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME for the interface that holds
// the source address of the route to `master_addr`. An IP address is taken as it is; a name is
// resolved within `resolve_timeout` seconds and its address picked by `policy`, as the plugin
// picks MASTER_ADDR. The error names what failed.
Result<EnvList> socket_ifname_for(const std::string& master_addr, const AddressPolicy& policy,
                                  unsigned resolve_timeout);

// NVIDIA GPUs the loaded driver lists (/proc/driver/nvidia/gpus/*), nullopt without the
// driver. Reads one directory: no library, no device is opened.
std::optional<std::uint32_t> nvidia_gpus();

// 2 * `bytes` lowercase hex digits from the kernel's random source (getrandom), for a value
// nobody can have guessed or printed before; nullopt when the kernel gives too few.
std::optional<std::string> random_hex(std::size_t bytes);

}  // namespace ddp::sys
