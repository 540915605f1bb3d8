// MASTER_ADDR policy: address text, networks, host name rewriting and the choice among the
// addresses a name resolves to. inet_pton/inet_ntop are pure conversions, no lookups.
#include "libddp/core/address.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <tuple>

#include "libddp/util/text.hpp"

namespace ddp {
namespace {

// INET6_ADDRSTRLEN plus room: longer text cannot be an address.
constexpr std::size_t k_max_address_text = 64;

std::size_t address_bytes(Family family) {
  return family == Family::ipv6 ? 16 : 4;
}

int max_prefix(Family family) {
  return family == Family::ipv6 ? 128 : 32;
}

// True when the first `prefix` bits of a and b agree.
bool same_prefix(const std::array<std::uint8_t, 16>& a, const std::array<std::uint8_t, 16>& b,
                 int prefix) {
  const auto whole = static_cast<std::size_t>(prefix / 8);
  if (std::memcmp(a.data(), b.data(), whole) != 0) return false;
  const int rest = prefix % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

}  // namespace

Result<IpAddress> IpAddress::parse(std::string_view text) {
  // inet_pton needs a NUL-terminated string; an embedded NUL would silently cut the text.
  if (text.empty() || text.size() >= k_max_address_text ||
      text.find('\0') != std::string_view::npos)
    return fail("bad IP address " + text::quote(text));
  char buf[k_max_address_text];
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  IpAddress address;
  if (inet_pton(AF_INET, buf, address.bytes.data()) == 1) {
    address.family = Family::ipv4;
    return address;
  }
  if (inet_pton(AF_INET6, buf, address.bytes.data()) == 1) {
    address.family = Family::ipv6;
    return address;
  }
  return fail("bad IP address " + text::quote(text));
}

std::string IpAddress::to_string() const {
  char buf[INET6_ADDRSTRLEN] = {};
  const int af = family == Family::ipv6 ? AF_INET6 : AF_INET;
  if (inet_ntop(af, bytes.data(), buf, sizeof buf) == nullptr) return {};
  return buf;
}

bool IpAddress::is_loopback() const {
  if (family == Family::ipv4) return bytes[0] == 127;
  static constexpr std::array<std::uint8_t, 16> k_v6_loopback{0, 0, 0, 0, 0, 0, 0, 0,
                                                              0, 0, 0, 0, 0, 0, 0, 1};
  static constexpr std::array<std::uint8_t, 12> k_v4_mapped{0, 0, 0, 0, 0,    0,
                                                            0, 0, 0, 0, 0xff, 0xff};
  if (bytes == k_v6_loopback) return true;
  return std::equal(k_v4_mapped.begin(), k_v4_mapped.end(), bytes.begin()) && bytes[12] == 127;
}

bool IpAddress::is_link_local() const {
  if (family == Family::ipv4) return bytes[0] == 169 && bytes[1] == 254;
  return bytes[0] == 0xfe && (bytes[1] & 0xc0) == 0x80;
}

Result<Cidr> Cidr::parse(std::string_view text) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos)
    return fail("bad network " + text::quote(text) + ": expected ADDRESS/PREFIX, e.g. 10.1.0.0/16");
  auto address = IpAddress::parse(text.substr(0, slash));
  if (!address)
    return fail("bad network " + text::quote(text) + ": " + text::quote(text.substr(0, slash)) +
                " is not an IP address");
  auto prefix = text::parse_uint<unsigned>(text.substr(slash + 1));
  const int limit = max_prefix(address->family);
  if (!prefix || *prefix > static_cast<unsigned>(limit)) {
    std::string message = "bad network " + text::quote(text) + ": the prefix must be 0 to ";
    text::append_uint(message, static_cast<std::uint64_t>(limit));
    return fail(std::move(message));
  }
  Cidr cidr;
  cidr.prefix = static_cast<int>(*prefix);
  cidr.network.family = address->family;
  // Keep only the network bits, so equal networks compare equal and print canonically.
  const std::size_t bytes = address_bytes(address->family);
  for (std::size_t i = 0; i < bytes; ++i) {
    const int bits = std::clamp(cidr.prefix - static_cast<int>(i * 8), 0, 8);
    const auto mask = static_cast<std::uint8_t>(bits == 0 ? 0 : 0xff << (8 - bits));
    cidr.network.bytes[i] = address->bytes[i] & mask;
  }
  return cidr;
}

bool Cidr::contains(const IpAddress& address) const {
  if (address.family != network.family) return false;
  const int prefix_bits = std::clamp(prefix, 0, max_prefix(network.family));
  return same_prefix(address.bytes, network.bytes, prefix_bits);
}

std::string Cidr::to_string() const {
  std::string text = network.to_string();
  text += '/';
  text::append_uint(text, static_cast<std::uint64_t>(std::max(prefix, 0)));
  return text;
}

std::string rewrite_host(std::string_view host, const AddressPolicy& policy) {
  // A node named by its address must stay an address; "10.0.0.1-ib" would not resolve.
  if (host.empty() || IpAddress::parse(host)) return std::string(host);
  const auto dot = host.find('.');
  std::string name;
  name.reserve(host.size() + policy.host_suffix.size() + policy.host_domain.size() + 1);
  // The suffix names the interface of the node, so it belongs to the first label:
  // "n1.cluster" + "-ib" is "n1-ib.cluster", not "n1.cluster-ib".
  name.append(host.substr(0, dot)).append(policy.host_suffix);
  if (dot != std::string_view::npos) {
    name.append(host.substr(dot));
  } else if (!policy.host_domain.empty()) {
    name += '.';
    name += policy.host_domain;
  }
  return name;
}

namespace {

// Why `a` cannot be MASTER_ADDR, or "" when it can.
std::string refusal(const IpAddress& a, const AddressPolicy& policy, const std::string& networks) {
  if (a.is_loopback()) return "loopback";
  if (a.is_link_local()) return "link-local";
  if (!policy.networks.empty() && std::none_of(policy.networks.begin(), policy.networks.end(),
                                               [&](const Cidr& net) { return net.contains(a); }))
    return "outside networks=" + networks;
  return {};
}

// The sort key of the documented rule: preferred family, earliest network, lowest address.
auto rank_key(const IpAddress& a, const AddressPolicy& policy) {
  const Family preferred = policy.family == Family::any ? Family::ipv4 : policy.family;
  std::size_t network = 0;
  while (network < policy.networks.size() && !policy.networks[network].contains(a)) ++network;
  return std::tuple(a.family != preferred, network, a.bytes);
}

}  // namespace

Result<IpAddress> choose_address(std::span<const IpAddress> candidates, const AddressPolicy& policy,
                                 std::string_view host) {
  std::string networks;
  for (const Cidr& net : policy.networks) {
    if (!networks.empty()) networks += ',';
    networks += net.to_string();
  }
  const IpAddress* best = nullptr;
  for (const IpAddress& a : candidates) {
    if (!refusal(a, policy, networks).empty()) continue;
    if (best == nullptr || rank_key(a, policy) < rank_key(*best, policy)) best = &a;
  }
  if (best != nullptr) return *best;

  std::string message = "no usable address for " + text::quote(host) + ": ";
  if (candidates.empty()) {
    message += "it resolved to no address; check DNS or /etc/hosts";
    return fail(std::move(message));
  }
  message += "resolved to ";
  bool first = true;
  for (const IpAddress& a : candidates) {
    if (!first) message += ", ";
    first = false;
    message += a.to_string() + " (" + refusal(a, policy, networks) + ")";
  }
  if (policy.networks.empty())
    message += "; set networks=CIDR in plugstack.conf or fix /etc/hosts";
  else
    message += "; fix networks= in plugstack.conf or the addresses of this host";
  return fail(std::move(message));
}

}  // namespace ddp
