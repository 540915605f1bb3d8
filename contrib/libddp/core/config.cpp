// plugstack.conf arguments. Strict on purpose: a typo in a key or a value is a message at
// srun time, not a silently ignored setting discovered after a hung NCCL rendezvous.
#include "libddp/core/config.hpp"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "libddp/core/environment.hpp"
#include "libddp/util/text.hpp"

namespace ddp {
namespace {

constexpr std::array<std::string_view, 14> k_keys{
    "port_range",   "addr",          "host_suffix",     "host_domain",    "networks",
    "family",       "env_file",      "env_override",    "check_addr",     "check_port",
    "default_mode", "socket_ifname", "omp_num_threads", "resolve_timeout"};

constexpr std::string_view k_valid_keys =
    "port_range, addr, host_suffix, host_domain, networks, family, env_file, env_override, "
    "check_addr, check_port, default_mode, socket_ifname, omp_num_threads, resolve_timeout";

// Longer than any resolver's own retries (resolv.conf allows at most 30 s x 5 attempts).
constexpr unsigned k_max_resolve_timeout = 300;

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
  for (std::string_view item : text::split(value, ',')) {
    auto cidr = Cidr::parse(item);
    if (!cidr) return std::unexpected(std::move(cidr.error()));
    networks.push_back(*cidr);
  }
  return networks;
}

// One setter per key (or family of keys): each checks `value` and stores it in `config`, or
// returns the message naming the argument and what it accepts.
using Setter = Result<void> (*)(Config& config, std::string_view key, std::string_view value);

Result<void> set_port_range(Config& config, std::string_view key, std::string_view value) {
  auto range = parse_port_range(value);
  if (!range) return bad_value(key, value, "expected LOW-HIGH with 1024 <= LOW <= HIGH <= 65535");
  config.port_range = *range;
  return {};
}

// The choice named `value`, or nullopt.
template <class T>
std::optional<T> choose(std::string_view value,
                        std::initializer_list<std::pair<std::string_view, T>> choices) {
  for (const auto& [name, choice] : choices) {
    if (name == value) return choice;
  }
  return std::nullopt;
}

Result<void> set_addr(Config& config, std::string_view key, std::string_view value) {
  auto mode = choose<AddrMode>(value, {{"ip", AddrMode::ip}, {"hostname", AddrMode::hostname}});
  if (!mode) return bad_value(key, value, "valid: ip, hostname");
  config.address.mode = *mode;
  return {};
}

Result<void> set_host_suffix(Config& config, std::string_view key, std::string_view value) {
  if (!is_dns_text(value, false))
    return bad_value(key, value, "expected letters, digits, '-' or '_', e.g. -ib");
  config.address.host_suffix = value;
  return {};
}

Result<void> set_host_domain(Config& config, std::string_view key, std::string_view value) {
  if (!is_dns_text(value, true))
    return bad_value(key, value,
                     "expected a domain without leading or trailing dot, e.g. ib.cluster");
  config.address.host_domain = value;
  return {};
}

Result<void> set_networks(Config& config, std::string_view key, std::string_view value) {
  auto networks = parse_networks(value);
  if (!networks) return bad_value(key, value, networks.error().message);
  config.address.networks = std::move(*networks);
  return {};
}

Result<void> set_family(Config& config, std::string_view key, std::string_view value) {
  auto family =
      choose<Family>(value, {{"any", Family::any}, {"ipv4", Family::ipv4}, {"ipv6", Family::ipv6}});
  if (!family) return bad_value(key, value, "valid: any, ipv4, ipv6");
  config.address.family = *family;
  return {};
}

Result<void> set_env_file(Config& config, std::string_view key, std::string_view value) {
  if (value.empty() || value.front() != '/')
    return bad_value(key, value, "expected an absolute path");
  config.env_file = value;
  return {};
}

Result<void> set_default_mode(Config& config, std::string_view key, std::string_view value) {
  // parse_mode() reads "" as "the default", which is not a value for the default itself.
  auto mode = parse_mode(value);
  if (value.empty() || !mode) return bad_value(key, value, "valid: tasks, torchrun");
  config.default_mode = *mode;
  return {};
}

Result<void> set_resolve_timeout(Config& config, std::string_view key, std::string_view value) {
  auto seconds = text::parse_unsigned(value, 1, k_max_resolve_timeout, key);
  if (!seconds) return bad_value(key, value, "expected seconds from 1 to 300");
  config.resolve_timeout = static_cast<unsigned>(*seconds);
  return {};
}

// socket_ifname and omp_num_threads: only "auto" and "no". A literal interface name belongs in
// env_file, where the admin writes the exact-match form (=ib0) directly.
Result<void> set_auto_or_no(Config& config, std::string_view key, std::string_view value) {
  if (value != "auto" && value != "no") return bad_value(key, value, "valid: auto, no");
  (key == "socket_ifname" ? config.socket_ifname : config.omp_num_threads) = value == "auto";
  return {};
}

// env_override, check_addr and check_port.
Result<void> set_flag(Config& config, std::string_view key, std::string_view value) {
  auto flag = parse_bool(value);
  if (!flag) return bad_value(key, value, "valid: yes, no, true, false, 1, 0");
  if (key == "env_override") config.env_override = *flag;
  if (key == "check_addr") config.check_addr = *flag;
  if (key == "check_port") config.check_port = *flag;
  return {};
}

// The setter of every key in k_keys, in the same order (checked below).
constexpr std::array<std::pair<std::string_view, Setter>, k_keys.size()> k_setters{{
    {"port_range", set_port_range},
    {"addr", set_addr},
    {"host_suffix", set_host_suffix},
    {"host_domain", set_host_domain},
    {"networks", set_networks},
    {"family", set_family},
    {"env_file", set_env_file},
    {"env_override", set_flag},
    {"check_addr", set_flag},
    {"check_port", set_flag},
    {"default_mode", set_default_mode},
    {"socket_ifname", set_auto_or_no},
    {"omp_num_threads", set_auto_or_no},
    {"resolve_timeout", set_resolve_timeout},
}};

constexpr bool setters_follow_keys() {
  for (std::size_t i = 0; i < k_keys.size(); ++i) {
    if (k_setters[i].first != k_keys[i]) return false;
  }
  return true;
}
static_assert(setters_follow_keys(), "k_setters must list k_keys, in the same order");

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
    const Setter set = k_setters[static_cast<std::size_t>(known - k_keys.begin())].second;
    auto applied = set(config, key, value);
    if (!applied) return std::unexpected(std::move(applied.error()));
  }
  return config;
}

}  // namespace ddp
