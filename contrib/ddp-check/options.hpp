// ddp-check's inputs: command-line options and the DDP environment `srun --ddp` exported.
// Pure: the environment comes in through a lookup function, so tests drive it with a table.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ddp-check/rendezvous/hello.hpp"
#include "libddp/util/cli.hpp"
#include "libddp/util/result.hpp"

namespace ddp::check {

// Looks up one environment variable; nullopt when unset.
using EnvLookup = cli::EnvLookup;

inline constexpr double k_default_timeout_s = 30;

// --pairs-rounds by default: ten peers per node find a slow one as surely as all of them (it is
// slow with every peer), and keep the phase under a minute on any step; smaller steps (11 nodes
// or fewer) still measure every pair.
inline constexpr std::uint32_t k_default_pairs_rounds = 10;

// Command-line options, defaults included; each has one row in option_table().
struct Options {
  double timeout_s = k_default_timeout_s;   // --timeout, else DDP_CHECK_TIMEOUT
  std::optional<Scope> scope;               // --mode tasks|torchrun; else from the environment
  bool nccl = true;                         // --no-nccl turns the NCCL phases off
  std::optional<double> nccl_min_busbw;     // --nccl-min-busbw GBPS, else DDP_CHECK_NCCL_MIN_BUSBW
  std::uint64_t nccl_bytes = 64ull << 20;   // --nccl-bytes N: all-reduce message size
  std::optional<std::string> topology;      // --topology [FILE.xml]: print the topology, no check
  bool topology_live = false;               // --topology without a file: this node
  std::optional<std::string> route_to;      // --route-to ADDR (with --topology): interface choice
  AuthMode auth = AuthMode::munge;          // --auth munge|none, else DDP_CHECK_AUTH
  std::optional<std::string> munge_socket;  // --munge-socket PATH, else DDP_CHECK_MUNGE_SOCKET
  bool pairs = false;            // --pairs: pairwise bandwidth and latency after the check
  double pairs_threshold = 0.5;  // --pairs-threshold: slow below this x the median
  double pairs_seconds = 0.5;    // --pairs-seconds: per direction and pair
  std::uint64_t pairs_bytes = 64ull << 20;  // --pairs-bytes N: NCCL send/recv size per pair
  // --pairs-rounds N|all: the first N rounds only (each node meets N peers); 0 for all.
  std::uint32_t pairs_rounds = k_default_pairs_rounds;
  std::optional<std::string> fabric;      // --fabric ib|efa|cxi|socket, else DDP_CHECK_FABRIC
  std::optional<std::string> net_plugin;  // --net-plugin NAME, else DDP_CHECK_NET_PLUGIN
  std::string sysfs_root = "/sys";        // --sysfs-root DIR: where the fabric is looked up
  bool help = false;
  bool version = false;
  friend bool operator==(const Options&, const Options&) = default;
};

// Every option: its value, its environment fallback (DDP_CHECK_TIMEOUT, DDP_CHECK_AUTH,
// DDP_CHECK_MUNGE_SOCKET, DDP_CHECK_NCCL_MIN_BUSBW, DDP_CHECK_FABRIC, DDP_CHECK_NET_PLUGIN), its
// usage text and its field. ddpgen's tests parse the command lines it renders with it.
std::span<const cli::Option<Options>> option_table();

// Parses argv[1..] (`args`) through option_table(), the environment fallbacks first.
// Errors name the option and what it accepts.
Result<Options> parse_options(std::span<const std::string_view> args, const EnvLookup& env);

// The usage text for --help.
std::string usage();

// Who this process is and where rank 0 listens.
struct Identity {
  Scope scope = Scope::ranks;
  Hello self;  // host, gpus and the rank fields; the connection fields are filled in later
  std::string master_addr;
  std::uint16_t master_port = 0;
  std::string run_tag;  // DDP_CHECK_RUN_TAG (k_run_tag_env): ends the suspect lines; "" unset
  bool is_master() const { return self.rank == 0; }
};

// Reads MASTER_ADDR, MASTER_PORT and the rank variables. Scope: `forced`, else ranks when RANK
// is set, else nodes when NODE_RANK and NNODES are (what `--ddp=torchrun` exports). The host is
// DDP_CHECK_HOSTNAME when set (tests fake several nodes on one machine), else `hostname`; the
// run tag DDP_CHECK_RUN_TAG when set, an error when it is not a valid_run_tag().
Result<Identity> read_identity(const EnvLookup& env, std::optional<Scope> forced,
                               std::string_view hostname);

}  // namespace ddp::check
