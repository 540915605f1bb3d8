// Option and environment parsing for ddp-check.
#include "ddp-check/options.hpp"

#include <string>
#include <utility>

#include "ddp-check/fabric/fabric.hpp"
#include "ddp-check/rendezvous/admit.hpp"
#include "libddp/util/cli.hpp"
#include "libddp/util/suspect.hpp"
#include "libddp/util/text.hpp"

namespace ddp::check {
namespace {

constexpr std::uint64_t k_max_u32 = 0xffffffffull;

// The variable `name`, a whole number from `min` to 2^32-1; `hint` follows "is not set".
Result<std::uint32_t> need_u32(const EnvLookup& env, std::string_view name, std::string_view hint,
                               std::uint64_t min = 0) {
  auto value = env(name);
  if (!value) return fail(std::string(name) + " is not set" + std::string(hint));
  auto n = text::parse_unsigned(*value, min, k_max_u32, name);
  if (!n) return std::unexpected(std::move(n.error()));
  return static_cast<std::uint32_t>(*n);
}

Result<std::optional<std::uint32_t>> maybe_u32(const EnvLookup& env, std::string_view name,
                                               std::uint64_t min = 0) {
  if (!env(name)) return std::optional<std::uint32_t>{};
  auto n = need_u32(env, name, "", min);
  if (!n) return std::unexpected(n.error());
  return std::optional<std::uint32_t>{*n};
}

}  // namespace

namespace {

constexpr std::string_view k_modes[] = {"tasks", "torchrun"};
constexpr std::string_view k_auths[] = {"munge", "none"};
constexpr std::string_view k_all[] = {"all"};

Result<void> check_fabric_name(std::string_view name) {
  auto fabric = parse_fabric(name);
  if (!fabric) return std::unexpected(std::move(fabric.error()));
  return {};
}

using Row = cli::Option<Options>;
using Value = cli::Value;

// Every option, once: name, value, environment fallback, usage text, and where it goes.
constexpr Row k_table[] = {
    {{.name = "--timeout",
      .kind = cli::Kind::positive,
      .arg = "SECONDS",
      .help = "bound on the whole check (default 30; env DDP_CHECK_TIMEOUT)",
      .env = "DDP_CHECK_TIMEOUT",
      .max = 3600,
      .expect = "expected seconds, greater than 0 and at most 3600"},
     [](Options& o, const Value& v) { o.timeout_s = v.decimal; }},
    {{.name = "--mode",
      .kind = cli::Kind::choice,
      .arg = "tasks|torchrun",
      .help = "what a process stands for (default: RANK set -> tasks,\n"
              "else NODE_RANK and NNODES set -> torchrun)",
      .words = k_modes,
      .expect = "mode"},
     [](Options& o, const Value& v) { o.scope = v.number == 0 ? Scope::ranks : Scope::nodes; }},
    {{.name = "--no-nccl", .help = "skip the NCCL phases (all-reduce; send/recv with --pairs)"},
     [](Options& o, const Value&) { o.nccl = false; }},
    {{.name = "--nccl-min-busbw",
      .kind = cli::Kind::positive,
      .arg = "GBPS",
      .help = "fail when the all-reduce bus bandwidth is lower\n(env DDP_CHECK_NCCL_MIN_BUSBW)",
      .env = "DDP_CHECK_NCCL_MIN_BUSBW",
      .expect = "expected a bus bandwidth in GB/s greater than 0"},
     [](Options& o, const Value& v) { o.nccl_min_busbw = v.decimal; }},
    {{.name = "--nccl-bytes",
      .kind = cli::Kind::number,
      .arg = "N",
      .help = "all-reduce size in bytes (default 67108864)",
      .min = 4,
      .max = 16ull << 30},
     [](Options& o, const Value& v) { o.nccl_bytes = v.number; }},
    {{.name = "--topology",
      .kind = cli::Kind::optional,
      .arg = "[FILE.xml]",
      .help = "print GPUs and network interfaces (hwloc) and exit"},
     [](Options& o, const Value& v) {
       o.topology_live = !v.given;
       if (v.given) o.topology = std::string(v.text);
     }},
    {{.name = "--route-to",
      .kind = cli::Kind::text,
      .arg = "ADDR",
      .help = "with --topology: the interface that routes to ADDR"},
     [](Options& o, const Value& v) { o.route_to = std::string(v.text); }},
    {{.name = "--auth",
      .kind = cli::Kind::choice,
      .arg = "munge|none",
      .help = "how hellos prove their job step and user (default munge;\n"
              "env DDP_CHECK_AUTH); none: for clusters without MUNGE,\n"
              "hellos are bound to the step but not authenticated",
      .env = "DDP_CHECK_AUTH",
      .words = k_auths,
      .expect = "authentication"},
     [](Options& o, const Value& v) { o.auth = v.number == 0 ? AuthMode::munge : AuthMode::none; }},
    {{.name = "--munge-socket",
      .kind = cli::Kind::text,
      .arg = "PATH",
      .help = "munged's socket (env DDP_CHECK_MUNGE_SOCKET; default:\n"
              "AuthInfo=socket= of slurm.conf, else libmunge's)",
      .env = "DDP_CHECK_MUNGE_SOCKET",
      .expect = "expected the path of munged's socket"},
     [](Options& o, const Value& v) { o.munge_socket = std::string(v.text); }},
    {{.name = "--pairs",
      .help = "then TCP bandwidth and round trip between the nodes, pair by\n"
              "pair in rounds; names the nodes below the threshold"},
     [](Options& o, const Value&) { o.pairs = true; }},
    {{.name = "--pairs-threshold",
      .kind = cli::Kind::share,
      .arg = "X",
      .help = "slow: a node's best pair below X times the median (0.5)",
      .expect = "expected a share of the median, greater than 0 and less than 1"},
     [](Options& o, const Value& v) { o.pairs_threshold = v.decimal; }},
    {{.name = "--pairs-seconds",
      .kind = cli::Kind::positive,
      .arg = "S",
      .help = "time per direction and pair (default 0.5)",
      .max = 60,
      .expect = "expected seconds, greater than 0 and at most 60"},
     [](Options& o, const Value& v) { o.pairs_seconds = v.decimal; }},
    {{.name = "--pairs-bytes",
      .kind = cli::Kind::number,
      .arg = "N",
      .help = "then, with a GPU on every node, NCCL send/recv of N bytes\n"
              "each way between the same pairs (default 67108864)",
      .min = 1,
      .max = 16ull << 30},
     [](Options& o, const Value& v) { o.pairs_bytes = v.number; }},
    {{.name = "--pairs-rounds",
      .kind = cli::Kind::number,
      .arg = "N|all",
      .help = "the first N rounds only: each node meets N others (default\n"
              "10); all: every pair (a step of n nodes has about n rounds)",
      .min = 1,
      .max = 100'000,
      .words = k_all},
     [](Options& o, const Value& v) {
       o.pairs_rounds = v.word ? 0 : static_cast<std::uint32_t>(v.number);
     }},
    {{.name = "--fabric",
      .kind = cli::Kind::text,
      .arg = "ib|efa|cxi|socket",
      .help = "every node must have this network active (env\n"
              "DDP_CHECK_FABRIC); names the nodes that lack it",
      .env = "DDP_CHECK_FABRIC",
      .check = check_fabric_name},
     [](Options& o, const Value& v) { o.fabric = std::string(v.text); }},
    {{.name = "--net-plugin",
      .kind = cli::Kind::text,
      .arg = "NAME",
      .help = "and NCCL's net plugin NAME must load (env\nDDP_CHECK_NET_PLUGIN)",
      .env = "DDP_CHECK_NET_PLUGIN",
      .expect = "expected the name NCCL_NET_PLUGIN takes"},
     [](Options& o, const Value& v) { o.net_plugin = std::string(v.text); }},
    {{.name = "--sysfs-root",
      .kind = cli::Kind::text,
      .arg = "DIR",
      .help = "where --fabric reads class/infiniband, class/cxi, class/net\n(default /sys)",
      .expect = "expected a directory"},
     [](Options& o, const Value& v) { o.sysfs_root = std::string(v.text); }},
    {{.name = "--help", .alias = "-h", .usage_name = "--help, --version"},
     [](Options& o, const Value&) { o.help = true; }},
    {{.name = "--version", .shown = cli::Shown::not_in_usage},
     [](Options& o, const Value&) { o.version = true; }},
};

// `unknown option "--timout" (did you mean "--timeout"? see --help)`.
std::string unknown_option(std::string_view arg, std::string_view near) {
  std::string message = "unknown option " + text::quote(arg, 40) + " (";
  if (!near.empty()) message += "did you mean " + text::quote(near) + "? ";
  return message + "see --help)";
}

std::string missing_value(std::string_view name) {
  return std::string(name) + ": missing value";
}

constexpr cli::Style k_style{.prefix = "",
                             .unknown = unknown_option,
                             .missing = missing_value,
                             .stop_at_operand = false,
                             .usage_width = 24};

}  // namespace

std::span<const cli::Option<Options>> option_table() {
  return k_table;
}

std::string usage() {
  return "usage: srun --ddp ddp-check [OPTIONS]          (every task is a rank)\n"
         "       srun --ddp=torchrun ddp-check [OPTIONS] (every task is a node launcher)\n"
         "       ddp-check --topology [FILE.xml] [--route-to ADDR]\n"
         "\n"
         "Every process connects to rank 0 at MASTER_ADDR:MASTER_PORT over TCP; rank 0 checks\n"
         "that the world is complete and consistent, prints one table and tells every process\n"
         "the verdict. Exit status: 0 healthy, 1 a fault was found, 2 bad usage or environment.\n"
         "\n" +
         cli::usage(cli::specs(option_table()), k_style) +
         "\n"
         "DDP_CHECK_HOSTNAME overrides the host name a process reports (tests fake nodes).\n"
         "DDP_CHECK_RUN_TAG (set by ddp-watch) ends every suspect line as \" [run TAG]\".\n";
}

Result<Options> parse_options(std::span<const std::string_view> args, const EnvLookup& env) {
  Options o;
  auto parsed = cli::parse(option_table(), k_style, args, env, o);
  if (!parsed) return std::unexpected(std::move(parsed.error()));
  if (o.route_to && !o.topology && !o.topology_live) {
    return fail("--route-to only goes with --topology");
  }
  return o;
}

namespace {

constexpr std::string_view k_hint = " (run under `srun --ddp` or `srun --ddp=torchrun`)";

// MASTER_ADDR and MASTER_PORT (PET_* as fallback), into `id`.
Result<void> read_master(const EnvLookup& env, Identity& id) {
  auto addr = env("MASTER_ADDR");
  if (!addr) addr = env("PET_MASTER_ADDR");
  if (!addr || addr->empty()) return fail("MASTER_ADDR is not set" + std::string(k_hint));
  id.master_addr = *addr;
  auto port_text = env("MASTER_PORT");
  if (!port_text) port_text = env("PET_MASTER_PORT");
  if (!port_text) return fail("MASTER_PORT is not set" + std::string(k_hint));
  auto port = text::parse_unsigned(*port_text, 1, 65535, "MASTER_PORT");
  if (!port) return std::unexpected(std::move(port.error()));
  id.master_port = static_cast<std::uint16_t>(*port);
  return {};
}

// A node launcher (--ddp=torchrun) stands for its node: NODE_RANK of NNODES.
Result<void> read_launcher(const EnvLookup& env, Hello& h) {
  if (!h.node_rank || !h.nnodes) return fail("NODE_RANK and NNODES must be set in torchrun mode");
  h.rank = *h.node_rank;
  h.world_size = *h.nnodes;
  h.local_rank = 0;
  h.local_world_size = 1;
  auto nproc = maybe_u32(env, "NPROC_PER_NODE", 1);
  if (!nproc) return std::unexpected(nproc.error());
  h.nproc_per_node = nproc->value_or(1);
  auto world = maybe_u32(env, "WORLD_SIZE");
  if (!world) return std::unexpected(world.error());
  if (*world && std::uint64_t{**world} != std::uint64_t{*h.nnodes} * h.nproc_per_node) {
    return fail("WORLD_SIZE=" + std::to_string(**world) + " but NNODES*NPROC_PER_NODE=" +
                std::to_string(std::uint64_t{*h.nnodes} * h.nproc_per_node));
  }
  return {};
}

// The rank variables of either scope into `h`.
Result<void> read_ranks(const EnvLookup& env, Scope scope, Hello& h) {
  auto node_rank = maybe_u32(env, "NODE_RANK");
  if (!node_rank) return std::unexpected(node_rank.error());
  auto nnodes = maybe_u32(env, "NNODES");
  if (!nnodes) return std::unexpected(nnodes.error());
  h.node_rank = *node_rank;
  h.nnodes = *nnodes;
  if (scope == Scope::nodes) return read_launcher(env, h);
  for (auto [name, field] : {std::pair{"RANK", &h.rank}, std::pair{"WORLD_SIZE", &h.world_size},
                             std::pair{"LOCAL_RANK", &h.local_rank},
                             std::pair{"LOCAL_WORLD_SIZE", &h.local_world_size}}) {
    auto value = need_u32(env, name, k_hint);
    if (!value) return std::unexpected(value.error());
    *field = *value;
  }
  return {};
}

// What a hello says of its host: the name, the GPUs, and the job step it belongs to.
void read_host(const EnvLookup& env, std::string_view hostname, Hello& h) {
  auto fake_host = env("DDP_CHECK_HOSTNAME");
  h.host = fake_host && !fake_host->empty() ? *fake_host : std::string(hostname);
  if (auto cvd = env("CUDA_VISIBLE_DEVICES"); cvd && !cvd->empty()) {
    h.gpus = *cvd;
  } else if (auto on_node = env("SLURM_GPUS_ON_NODE"); on_node && !on_node->empty()) {
    h.gpus = "n=" + *on_node;
  } else {
    h.gpus = "-";
  }
  h.ifname = "?";
  h.if_kind = "?";
  h.address = "?";
  const StepBinding binding = read_binding(env);
  h.job = binding.job;
  h.step = binding.step;
  h.het = binding.het;
}

}  // namespace

Result<Identity> read_identity(const EnvLookup& env, std::optional<Scope> forced,
                               std::string_view hostname) {
  Identity id;
  if (forced) {
    id.scope = *forced;
  } else if (env("RANK")) {
    id.scope = Scope::ranks;
  } else if (env("NODE_RANK") && env("NNODES")) {
    id.scope = Scope::nodes;
  } else {
    return fail("neither RANK nor NODE_RANK and NNODES are set" + std::string(k_hint));
  }
  if (auto r = read_master(env, id); !r) return std::unexpected(r.error());
  if (auto r = read_ranks(env, id.scope, id.self); !r) return std::unexpected(r.error());
  read_host(env, hostname, id.self);
  id.self.port = id.master_port;
  if (auto tag = env(k_run_tag_env); tag && !tag->empty()) {
    if (!valid_run_tag(*tag)) {
      return fail(std::string(k_run_tag_env) + "=" + text::quote(*tag, 80) +
                  ": not a run tag (8 to 64 lowercase hex digits, as ddp-watch sets it)");
    }
    id.run_tag = *tag;
  }
  return id;
}

}  // namespace ddp::check
