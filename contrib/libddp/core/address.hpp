// MASTER_ADDR policy: which name or address of the rank-0 node every node exports.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "libddp/util/result.hpp"

namespace ddp {

// Address family of an address, or the preferred family of a policy (any: resolver order).
enum class Family { any, ipv4, ipv6 };

// An IPv4 or IPv6 address as plain bytes (IPv4 uses the first 4).
struct IpAddress {
  Family family = Family::ipv4;  // ipv4 or ipv6, never any
  std::array<std::uint8_t, 16> bytes{};

  // Parses dotted IPv4 or textual IPv6 (no zone index, no surrounding blanks).
  static Result<IpAddress> parse(std::string_view text);
  // Canonical text (inet_ntop): "10.0.0.1", "fd00::1".
  std::string to_string() const;
  // 127.0.0.0/8, ::1 and IPv4-mapped loopback.
  bool is_loopback() const;
  // 169.254.0.0/16 and fe80::/10: valid on one link only, so never a MASTER_ADDR.
  bool is_link_local() const;
  bool operator==(const IpAddress&) const = default;
};

// A network in CIDR notation ("10.1.0.0/16", "fd00::/8").
struct Cidr {
  IpAddress network;
  int prefix = 0;

  // Parses "ADDRESS/PREFIX". Host bits are masked off: "10.1.2.3/16" means 10.1.0.0/16.
  static Result<Cidr> parse(std::string_view text);
  // True when `address` has this network's family and its first `prefix` bits.
  bool contains(const IpAddress& address) const;
  // "10.1.0.0/16".
  std::string to_string() const;
};

// What MASTER_ADDR holds: a resolved address (ip) or the rewritten name itself (hostname).
enum class AddrMode { ip, hostname };

// Site policy from plugstack.conf. Defaults live here and only here.
struct AddressPolicy {
  AddrMode mode = AddrMode::ip;
  std::string host_suffix;      // appended to the short name: "-ib", "i"
  std::string host_domain;      // appended after a dot: "ib.cluster.example"
  std::vector<Cidr> networks;   // when non-empty, only addresses inside one of these qualify
  Family family = Family::any;  // preferred family; the other is used only when none match
};

// The name to resolve or export for `host`: the suffix goes after the first label
// ("n1" + "-ib" -> "n1-ib", "n1.cl" -> "n1-ib.cl"); "." + domain is appended only to a name
// without a dot. An IP literal or an empty host is returned unchanged.
std::string rewrite_host(std::string_view host, const AddressPolicy& policy);

// How choose_address() picks, in words for `srun -v` and the documentation.
inline constexpr std::string_view k_address_rule =
    "rule: no loopback or link-local, inside networks=, family= first (IPv4 under any), "
    "earliest networks= entry, then the lowest address";

// Picks the address to export among `candidates` by a rule that ignores their order, so that
// nodes whose resolvers order them differently agree: loopback and link-local never qualify,
// nor addresses outside `networks`; then the policy's family first (IPv4 under family=any), the
// network listed first in `networks`, and the numerically lowest address. The error names
// `host`, lists what it resolved to and why each was refused, and says what to configure.
Result<IpAddress> choose_address(std::span<const IpAddress> candidates, const AddressPolicy& policy,
                                 std::string_view host);

}  // namespace ddp
