// What ddp-check learns from the running system: host name, interfaces, affinity. The only
// place besides session.cpp that calls the operating system.
#pragma once

#include <sys/socket.h>

#include <optional>
#include <string>

namespace ddp::check::probe {

// gethostname(), "?" if it fails.
std::string hostname();

// The interface that holds local address `addr` (getifaddrs), nullopt if none does.
std::optional<std::string> interface_of(const sockaddr* addr);

// "10.0.0.5" / "fe80::1" for a socket address.
std::string address_text(const sockaddr* addr);

// The interface the kernel routes `host` through: a connected UDP socket (no packet is sent),
// getsockname, then interface_of. nullopt when `host` does not resolve or has no route.
std::optional<std::string> route_interface(const std::string& host);

// CPUs in this process's affinity mask (sched_getaffinity), 0 if unknown.
unsigned affinity_cpus();

}  // namespace ddp::check::probe
