// MASTER_PORT: the same value on every node of a step, computed without communication.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "libddp/util/result.hpp"
#include "libddp/util/rules.hpp"  // PortRange, parse_port_range: shared with ddpgen

namespace ddp {

// Parses /proc/sys/net/ipv4/ip_local_port_range contents ("32768\t60999\n").
Result<PortRange> parse_ephemeral_range(std::string_view text);

// Deterministic port for (job, step) inside `window`. Steps of one job map to distinct ports as
// long as there are fewer of them than the window has ports; different jobs are spread by a
// hash of the job id. (Heterogeneous steps are refused, so no component offset is needed.)
std::uint16_t derive_port(std::uint32_t job_id, std::uint32_t step_id, PortRange window);

// The first port of SLURM_STEP_RESV_PORTS ("12000-12003" or "12000,12002").
Result<std::uint16_t> first_reserved_port(std::string_view text);

// Where the chosen port came from, for `srun -v`.
enum class PortSource { user, reserved, derived };

// What choose_port() needs; an unset or empty variable is std::nullopt or "" alike.
struct PortInputs {
  std::optional<std::string_view> user_override;  // DDP_MASTER_PORT as the user set it
  std::optional<std::string_view> reserved;       // SLURM_STEP_RESV_PORTS
  std::uint32_t job_id = 0;
  std::uint32_t step_id = 0;
};

// The port every node of the step exports, and its origin.
struct PortChoice {
  std::uint16_t port = 0;
  PortSource source = PortSource::derived;
};

// Precedence: user override, then Slurm's reserved ports, then derive_port() in `window`.
// Errors name the variable and its value: DDP_MASTER_PORT must be 1..65535.
Result<PortChoice> choose_port(const PortInputs& in, PortRange window);

}  // namespace ddp
