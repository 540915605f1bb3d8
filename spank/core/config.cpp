// plugstack.conf arguments. Strict on purpose: a typo in a key or a value is a message at
// srun time, not a silently ignored setting discovered after a hung NCCL rendezvous.
#include "config.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "environment.hpp"
#include "text.hpp"

namespace ddp {
namespace {

constexpr std::array<std::string_view, 13> k_keys{
    "port_range",   "addr",          "host_suffix",    "host_domain", "networks",
    "family",       "env_file",      "env_override",   "check_addr",  "check_port",
    "default_mode", "socket_ifname", "omp_num_threads"};

constexpr std::string_view k_valid_keys =
    "port_range, addr, host_suffix, host_domain, networks, family, env_file, env_override, "
    "check_addr, check_port, default_mode, socket_ifname, omp_num_threads";

std::unexpected<Error> bad_value(std::string_view key, std::string_view value,
                                 std::string_view valid) {
  std::string message = "plugstack.conf argument ";
  message.append(key).append("=").append(text::quote(value)).append(": ").append(valid);
  return fail(std::move(message));
}

std::unexpected<Error> unknown_key(std::string_view key) {
  std::string message = "unknown plugstack.conf argument " + text::quote(key) + " (";
  const std::string best = text::did_you_mean(key, k_keys);
  if (!best.empty()) message.append("did you mean \"").append(best).append("\"? ");
  message.append("valid: ").append(k_valid_keys).append(")");
  return fail(std::move(message));
}

std::optional<bool> parse_bool(std::string_view value) {
  if (value == "yes" || value == "true" || value == "1") return true;
  if (value == "no" || value == "false" || value == "0") return false;
  return std::nullopt;
}

// Letters, digits, '-' and '_' (some sites use them in interface names), and inner dots.
bool is_dns_text(std::string_view value, bool dots_allowed) {
  if (value.empty() || value.front() == '.' || value.back() == '.') return false;
  if (value.find("..") != std::string_view::npos) return false;
  return std::all_of(value.begin(), value.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || (dots_allowed && c == '.');
  });
}

Result<std::vector<Cidr>> parse_networks(std::string_view value) {
  std::vector<Cidr> networks;
  std::size_t pos = 0;
  while (true) {
    const auto comma = value.find(',', pos);
    const std::string_view item =
        value.substr(pos, comma == std::string_view::npos ? value.npos : comma - pos);
    auto cidr = Cidr::parse(item);
    if (!cidr) return std::unexpected(std::move(cidr.error()));
    networks.push_back(*cidr);
    if (comma == std::string_view::npos) return networks;
    pos = comma + 1;
  }
}

// Applies one key=value to `config`; the key is known to be one of k_keys.
Result<void> apply(Config& config, std::string_view key, std::string_view value) {
  if (key == "port_range") {
    auto range = parse_port_range(value);
    if (!range) return bad_value(key, value, "expected LOW-HIGH with 1024 <= LOW <= HIGH <= 65535");
    config.port_range = *range;
  } else if (key == "addr") {
    if (value == "ip")
      config.address.mode = AddrMode::ip;
    else if (value == "hostname")
      config.address.mode = AddrMode::hostname;
    else
      return bad_value(key, value, "valid: ip, hostname");
  } else if (key == "host_suffix") {
    if (!is_dns_text(value, false))
      return bad_value(key, value, "expected letters, digits, '-' or '_', e.g. -ib");
    config.address.host_suffix = value;
  } else if (key == "host_domain") {
    if (!is_dns_text(value, true))
      return bad_value(key, value,
                       "expected a domain without leading or trailing dot, e.g. ib.cluster");
    config.address.host_domain = value;
  } else if (key == "networks") {
    auto networks = parse_networks(value);
    if (!networks) return bad_value(key, value, networks.error().message);
    config.address.networks = std::move(*networks);
  } else if (key == "family") {
    if (value == "any")
      config.address.family = Family::any;
    else if (value == "ipv4")
      config.address.family = Family::ipv4;
    else if (value == "ipv6")
      config.address.family = Family::ipv6;
    else
      return bad_value(key, value, "valid: any, ipv4, ipv6");
  } else if (key == "env_file") {
    if (value.empty() || value.front() != '/')
      return bad_value(key, value, "expected an absolute path");
    config.env_file = value;
  } else if (key == "default_mode") {
    // parse_mode() reads "" as "the default", which is not a value for the default itself.
    if (value.empty() || !parse_mode(value, "tasks"))
      return bad_value(key, value, "valid: tasks, torchrun");
    config.default_mode = value;
  } else if (key == "socket_ifname" || key == "omp_num_threads") {
    // Only "auto" and "no": a literal interface name belongs in env_file, where the admin
    // writes the exact-match form (=ib0) directly.
    if (value != "auto" && value != "no") return bad_value(key, value, "valid: auto, no");
    (key == "socket_ifname" ? config.socket_ifname : config.omp_num_threads) = value == "auto";
  } else {
    auto flag = parse_bool(value);
    if (!flag) return bad_value(key, value, "valid: yes, no, true, false, 1, 0");
    if (key == "env_override") config.env_override = *flag;
    if (key == "check_addr") config.check_addr = *flag;
    if (key == "check_port") config.check_port = *flag;
  }
  return {};
}

}  // namespace

Result<Config> parse_config(std::span<const std::string_view> args) {
  Config config;
  std::array<bool, k_keys.size()> seen{};
  for (std::string_view arg : args) {
    const auto eq = arg.find('=');
    if (eq == std::string_view::npos)
      return fail("plugstack.conf argument " + text::quote(arg) +
                  " is not key=value (valid keys: " + std::string(k_valid_keys) + ")");
    const std::string_view key = arg.substr(0, eq);
    const std::string_view value = arg.substr(eq + 1);
    const auto known = std::find(k_keys.begin(), k_keys.end(), key);
    if (known == k_keys.end()) return unknown_key(key);
    // Strict: two values for one key is a conflict the admin must resolve, not "last wins".
    auto& was_seen = seen[static_cast<std::size_t>(known - k_keys.begin())];
    if (was_seen) return fail("plugstack.conf argument " + text::quote(key) + " is given twice");
    was_seen = true;
    auto applied = apply(config, key, value);
    if (!applied) return std::unexpected(std::move(applied.error()));
  }
  return config;
}

}  // namespace ddp
