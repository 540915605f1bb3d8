// MASTER_PORT choice. Every node computes it alone from facts all nodes share (job and step, or
// Slurm's reserved ports), so no node has to tell the others.
#include "libddp/core/port.hpp"

#include <string>

#include "libddp/util/text.hpp"

namespace ddp {
namespace {

// splitmix64's finalizer: consecutive job ids land far apart in the window.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

}  // namespace

Result<PortRange> parse_ephemeral_range(std::string_view text) {
  // The kernel writes "LOW\tHIGH\n"; accept any blanks between and around the two numbers.
  std::string_view fields[2];
  std::size_t found = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (is_space(text[pos])) {
      ++pos;
      continue;
    }
    std::size_t start = pos;
    while (pos < text.size() && !is_space(text[pos])) ++pos;
    if (found == 2) {
      found = 3;
      break;
    }
    fields[found++] = text.substr(start, pos - start);
  }
  std::optional<std::uint16_t> low, high;
  if (found == 2) {
    low = parse_port(fields[0]);
    high = parse_port(fields[1]);
  }
  if (!low || !high || *low > *high)
    return fail("bad ip_local_port_range " + text::quote(text) + ": expected \"LOW HIGH\"");
  return PortRange{*low, *high};
}

std::uint16_t derive_port(std::uint32_t job_id, std::uint32_t step_id, PortRange window) {
  if (window.last < window.first) return window.first;  // not a range; nothing to spread over
  const std::uint64_t size = window.size();
  // Reduce each term before adding so the sum never wraps 2^64: a wrap would break the
  // "distinct steps get distinct ports" guarantee for window sizes that are not powers of two.
  const std::uint64_t job_slot = mix(job_id) % size;
  const std::uint64_t step_slot = std::uint64_t{step_id} % size;
  return static_cast<std::uint16_t>(window.first + (job_slot + step_slot) % size);
}

Result<std::uint16_t> first_reserved_port(std::string_view text) {
  // Slurm writes "12000-12003", "12000,12002" or "12000"; the first number is what we need,
  // but the rest must still look like ports so that garbage is not half-accepted.
  std::size_t pos = 0;
  std::optional<std::uint16_t> first;
  while (true) {
    std::size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
    auto port = parse_port(text.substr(start, pos - start));
    if (!port) break;
    if (!first) first = port;
    if (pos == text.size()) return *first;
    if (text[pos] != '-' && text[pos] != ',') break;
    ++pos;
  }
  return fail("bad reserved port list " + text::quote(text) +
              ": expected PORT, PORT-PORT or PORT,PORT,...");
}

Result<PortChoice> choose_port(const PortInputs& in, PortRange window) {
  // An empty variable counts as unset: "export DDP_MASTER_PORT=" is how users clear it.
  if (in.user_override && !in.user_override->empty()) {
    auto port = parse_port(*in.user_override);
    if (!port)
      return fail("DDP_MASTER_PORT=" + text::quote(*in.user_override) +
                  ": not a port (expected an integer from 1 to 65535)");
    return PortChoice{*port, PortSource::user};
  }
  if (in.reserved && !in.reserved->empty()) {
    auto port = first_reserved_port(*in.reserved);
    if (!port) return fail("SLURM_STEP_RESV_PORTS: " + port.error().message);
    return PortChoice{*port, PortSource::reserved};
  }
  return PortChoice{derive_port(in.job_id, in.step_id, window), PortSource::derived};
}

}  // namespace ddp
