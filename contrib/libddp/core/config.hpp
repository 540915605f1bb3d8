// Site configuration: the plugin's arguments in plugstack.conf, parsed strictly.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "libddp/core/address.hpp"
#include "libddp/core/environment.hpp"
#include "libddp/core/port.hpp"
#include "libddp/util/result.hpp"

namespace ddp {

// Every setting with its default. Keys in plugstack.conf are the member names below
// (see README "Site configuration"); an unknown key or a bad value is an error naming it.
struct Config {
  PortRange port_range =
      k_default_port_range;         // port_range=LOW-HIGH, kept below the ephemeral range
  AddressPolicy address;            // addr=, host_suffix=, host_domain=, networks=, family=
  std::string env_file;             // env_file=PATH: KEY=VALUE lines exported to --ddp tasks
  bool env_override = false;        // env_override=yes: env_file wins over the user's values
  bool check_addr = true;           // check_addr=no: skip the rank-0 own-address check
  bool check_port = true;           // check_port=no: skip the rank-0 test bind
  Mode default_mode = Mode::tasks;  // default_mode=: the mode of a bare --ddp
  // resolve_timeout=SECONDS: how long a node may wait for its resolver to answer for the head
  // node's name before the step is refused (a dead DNS server must not stall every launch).
  unsigned resolve_timeout = 5;
  // socket_ifname=auto: NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME name (exactly) the interface
  // that routes to MASTER_ADDR on each node; socket_ifname=no (default) leaves them alone.
  bool socket_ifname = false;
  // omp_num_threads=auto (default): OMP_NUM_THREADS from the task's CPUs when the user did not
  // set it; omp_num_threads=no leaves it alone.
  bool omp_num_threads = true;
};

// Parses plugstack.conf arguments ("key=value" each). Strict: an argument without '=', an
// unknown key, a bad or empty value and a key given twice are errors naming the argument.
Result<Config> parse_config(std::span<const std::string_view> args);

}  // namespace ddp
