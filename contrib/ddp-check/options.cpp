// Option and environment parsing for ddp-check.
#include "ddp-check/options.hpp"

#include <string>
#include <utility>

#include "ddp-check/fabric/fabric.hpp"
#include "ddp-check/rendezvous/admit.hpp"
#include "libddp/util/text.hpp"

namespace ddp::check {
namespace {

using text::parse_positive;

Result<double> parse_timeout(std::string_view what, std::string_view text) {
  auto value = parse_positive(text);
  if (!value || *value > 3600) {
    return fail(std::string(what) + " " + text::quote(text, 40) +
                ": expected seconds, greater than 0 and at most 3600");
  }
  return *value;
}

Result<double> parse_busbw(std::string_view what, std::string_view text) {
  auto value = parse_positive(text);
  if (!value) {
    return fail(std::string(what) + " " + text::quote(text, 40) +
                ": expected a bus bandwidth in GB/s greater than 0");
  }
  return *value;
}

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

std::string usage() {
  return "usage: srun --ddp ddp-check [OPTIONS]          (every task is a rank)\n"
         "       srun --ddp=torchrun ddp-check [OPTIONS] (every task is a node launcher)\n"
         "       ddp-check --topology [FILE.xml] [--route-to ADDR]\n"
         "\n"
         "Every process connects to rank 0 at MASTER_ADDR:MASTER_PORT over TCP; rank 0 checks\n"
         "that the world is complete and consistent, prints one table and tells every process\n"
         "the verdict. Exit status: 0 healthy, 1 a fault was found, 2 bad usage or environment.\n"
         "\n"
         "  --timeout SECONDS       bound on the whole check (default 30; env DDP_CHECK_TIMEOUT)\n"
         "  --mode tasks|torchrun   what a process stands for (default: RANK set -> tasks,\n"
         "                          else NODE_RANK and NNODES set -> torchrun)\n"
         "  --no-nccl               skip the NCCL phases (all-reduce; send/recv with --pairs)\n"
         "  --nccl-min-busbw GBPS   fail when the all-reduce bus bandwidth is lower\n"
         "                          (env DDP_CHECK_NCCL_MIN_BUSBW)\n"
         "  --nccl-bytes N          all-reduce size in bytes (default 67108864)\n"
         "  --topology [FILE.xml]   print GPUs and network interfaces (hwloc) and exit\n"
         "  --route-to ADDR         with --topology: the interface that routes to ADDR\n"
         "  --auth munge|none       how hellos prove their job step and user (default munge;\n"
         "                          env DDP_CHECK_AUTH); none: for clusters without MUNGE,\n"
         "                          hellos are bound to the step but not authenticated\n"
         "  --munge-socket PATH     munged's socket (env DDP_CHECK_MUNGE_SOCKET; default:\n"
         "                          AuthInfo=socket= of slurm.conf, else libmunge's)\n"
         "  --pairs                 then TCP bandwidth and round trip between the nodes, pair by\n"
         "                          pair in rounds; names the nodes below the threshold\n"
         "  --pairs-threshold X     slow: a node's best pair below X times the median (0.5)\n"
         "  --pairs-seconds S       time per direction and pair (default 0.5)\n"
         "  --pairs-bytes N         then, with a GPU on every node, NCCL send/recv of N bytes\n"
         "                          each way between the same pairs (default 67108864)\n"
         "  --pairs-rounds N|all    the first N rounds only: each node meets N others (default\n"
         "                          10); all: every pair (a step of n nodes has about n rounds)\n"
         "  --fabric ib|efa|cxi|socket  every node must have this network active (env\n"
         "                          DDP_CHECK_FABRIC); names the nodes that lack it\n"
         "  --net-plugin NAME       and NCCL's net plugin NAME must load (env\n"
         "                          DDP_CHECK_NET_PLUGIN)\n"
         "  --sysfs-root DIR        where --fabric reads class/infiniband, class/cxi, class/net\n"
         "                          (default /sys)\n"
         "  --help, --version\n"
         "\n"
         "DDP_CHECK_HOSTNAME overrides the host name a process reports (tests fake nodes).\n";
}

namespace {

// One command-line argument and its value, as parse_options() walks argv.
struct Cursor {
  std::span<const std::string_view> args;
  std::size_t i = 0;
  std::string_view name;
  std::optional<std::string_view> inline_value;

  Result<std::string_view> value() {
    if (inline_value) return *inline_value;
    if (i + 1 >= args.size()) return fail(std::string(name) + ": missing value");
    return args[++i];
  }
  Result<void> no_value() const {
    if (inline_value) return fail(std::string(name) + " takes no value");
    return {};
  }
};

Result<AuthMode> parse_auth(std::string_view what, std::string_view text) {
  if (text == "munge") return AuthMode::munge;
  if (text == "none") return AuthMode::none;
  return fail(std::string(what) + " " + text::quote(text, 40) +
              ": unknown authentication (valid: munge, none)");
}

Result<void> apply_env(Options& o, const EnvLookup& env) {
  if (auto t = env("DDP_CHECK_TIMEOUT")) {
    auto value = parse_timeout("DDP_CHECK_TIMEOUT", *t);
    if (!value) return std::unexpected(value.error());
    o.timeout_s = *value;
  }
  if (auto b = env("DDP_CHECK_NCCL_MIN_BUSBW")) {
    auto value = parse_busbw("DDP_CHECK_NCCL_MIN_BUSBW", *b);
    if (!value) return std::unexpected(value.error());
    o.nccl_min_busbw = *value;
  }
  if (auto a = env("DDP_CHECK_AUTH")) {
    auto value = parse_auth("DDP_CHECK_AUTH", *a);
    if (!value) return std::unexpected(value.error());
    o.auth = *value;
  }
  if (auto s = env("DDP_CHECK_MUNGE_SOCKET"); s && !s->empty()) o.munge_socket = *s;
  if (auto f = env("DDP_CHECK_FABRIC"); f && !f->empty()) {
    auto fabric = parse_fabric(*f);
    if (!fabric) return fail("DDP_CHECK_FABRIC: " + fabric.error().message);
    o.fabric = *f;
  }
  if (auto p = env("DDP_CHECK_NET_PLUGIN"); p && !p->empty()) o.net_plugin = *p;
  return {};
}

// --pairs-threshold: a share of the median, above 0 and below 1.
Result<void> apply_pairs_threshold(Options& o, std::string_view v) {
  auto x = text::parse_share(v);
  if (!x) {
    return fail("--pairs-threshold " + text::quote(v, 40) +
                ": expected a share of the median, greater than 0 and less than 1");
  }
  o.pairs_threshold = *x;
  return {};
}

Result<void> apply_pairs_seconds(Options& o, std::string_view v) {
  auto x = parse_positive(v);
  if (!x || *x > 60) {
    return fail("--pairs-seconds " + text::quote(v, 40) +
                ": expected seconds, greater than 0 and at most 60");
  }
  o.pairs_seconds = *x;
  return {};
}

Result<void> apply_fabric(Options& o, std::string_view v) {
  auto fabric = parse_fabric(v);
  if (!fabric) return fail("--fabric: " + fabric.error().message);
  o.fabric = std::string(v);
  return {};
}

Result<void> apply_mode(Options& o, std::string_view v) {
  if (v == "tasks")
    o.scope = Scope::ranks;
  else if (v == "torchrun")
    o.scope = Scope::nodes;
  else
    return fail("--mode " + text::quote(v, 40) + ": unknown mode (valid: tasks, torchrun)");
  return {};
}

Result<void> apply_nccl_bytes(Options& o, std::string_view v) {
  auto n = text::parse_unsigned(v, 4, 16ull << 30, "--nccl-bytes");
  if (!n) return std::unexpected(std::move(n.error()));
  o.nccl_bytes = *n;
  return {};
}

Result<void> apply_timeout(Options& o, std::string_view v) {
  auto t = parse_timeout("--timeout", v);
  if (!t) return std::unexpected(t.error());
  o.timeout_s = *t;
  return {};
}

Result<void> apply_pairs_rounds(Options& o, std::string_view v) {
  if (v == "all") {
    o.pairs_rounds = 0;
    return {};
  }
  auto n = text::parse_unsigned(v, 1, 100'000, "--pairs-rounds");
  if (!n) return fail(n.error().message + " (or all)");
  o.pairs_rounds = static_cast<std::uint32_t>(*n);
  return {};
}

Result<void> apply_pairs_bytes(Options& o, std::string_view v) {
  auto n = text::parse_unsigned(v, 1, 16ull << 30, "--pairs-bytes");
  if (!n) return std::unexpected(std::move(n.error()));
  o.pairs_bytes = *n;
  return {};
}

// Options that take a value: --timeout, --mode, --nccl-min-busbw, --nccl-bytes, --route-to,
// --auth, --munge-socket. nullopt when `c.name` is none of them.
std::optional<Result<void>> apply_valued(Options& o, Cursor& c) {
  using Apply = Result<void> (*)(Options&, std::string_view);
  static constexpr std::pair<std::string_view, Apply> k_valued[] = {
      {"--timeout", apply_timeout},
      {"--mode", apply_mode},
      {"--pairs-threshold", apply_pairs_threshold},
      {"--pairs-seconds", apply_pairs_seconds},
      {"--pairs-bytes", apply_pairs_bytes},
      {"--pairs-rounds", apply_pairs_rounds},
      {"--fabric", apply_fabric},
      {"--net-plugin",
       [](Options& opts, std::string_view v) -> Result<void> {
         if (v.empty()) return fail("--net-plugin: expected the name NCCL_NET_PLUGIN takes");
         opts.net_plugin = std::string(v);
         return {};
       }},
      {"--sysfs-root",
       [](Options& opts, std::string_view v) -> Result<void> {
         if (v.empty()) return fail("--sysfs-root: expected a directory");
         opts.sysfs_root = std::string(v);
         return {};
       }},
      {"--nccl-min-busbw",
       [](Options& opts, std::string_view v) -> Result<void> {
         auto b = parse_busbw("--nccl-min-busbw", v);
         if (!b) return std::unexpected(b.error());
         opts.nccl_min_busbw = *b;
         return {};
       }},
      {"--nccl-bytes", apply_nccl_bytes},
      {"--route-to",
       [](Options& opts, std::string_view v) -> Result<void> {
         opts.route_to = std::string(v);
         return {};
       }},
      {"--auth",
       [](Options& opts, std::string_view v) -> Result<void> {
         auto a = parse_auth("--auth", v);
         if (!a) return std::unexpected(a.error());
         opts.auth = *a;
         return {};
       }},
      {"--munge-socket",
       [](Options& opts, std::string_view v) -> Result<void> {
         if (v.empty()) return fail("--munge-socket: expected the path of munged's socket");
         opts.munge_socket = std::string(v);
         return {};
       }},
  };
  for (const auto& [option, apply] : k_valued) {
    if (c.name != option) continue;
    auto v = c.value();
    if (!v) return std::unexpected(v.error());
    return apply(o, *v);
  }
  return std::nullopt;
}

// Every option usage() lists, for the did-you-mean of an unknown one.
constexpr std::string_view k_option_names[] = {
    "--timeout",         "--mode",          "--no-nccl",
    "--nccl-min-busbw",  "--nccl-bytes",    "--topology",
    "--route-to",        "--auth",          "--help",
    "--version",         "--munge-socket",  "--pairs",
    "--pairs-threshold", "--pairs-seconds", "--fabric",
    "--net-plugin",      "--sysfs-root",    "--pairs-bytes",
    "--pairs-rounds",
};

// `unknown option "--timout" (did you mean "--timeout"? see --help)`.
std::unexpected<Error> unknown_option(const Cursor& c) {
  std::string message = "unknown option " + text::quote(c.args[c.i], 40) + " (";
  if (auto best = text::did_you_mean(c.name, k_option_names); !best.empty())
    message += "did you mean " + text::quote(best) + "? ";
  return fail(message + "see --help)");
}

// Options without a value, and --topology with its optional file.
Result<void> apply_flag(Options& o, Cursor& c) {
  if (c.name == "--topology") {
    o.topology_live = true;
    if (c.inline_value) {
      o.topology = std::string(*c.inline_value);
      o.topology_live = false;
    } else if (c.i + 1 < c.args.size() && !c.args[c.i + 1].starts_with("-")) {
      o.topology = std::string(c.args[++c.i]);
      o.topology_live = false;
    }
    return {};
  }
  if (c.name == "--pairs") {
    o.pairs = true;
    return c.no_value();
  }
  bool* flag = c.name == "--no-nccl"                  ? &o.nccl
               : c.name == "--help" || c.name == "-h" ? &o.help
               : c.name == "--version"                ? &o.version
                                                      : nullptr;
  if (!flag) return unknown_option(c);
  if (auto r = c.no_value(); !r) return r;
  *flag = c.name != "--no-nccl";
  return {};
}

}  // namespace

Result<Options> parse_options(std::span<const std::string_view> args, const EnvLookup& env) {
  Options o;
  if (auto r = apply_env(o, env); !r) return std::unexpected(r.error());
  for (Cursor c{args, 0, {}, {}}; c.i < args.size(); ++c.i) {
    std::string_view arg = args[c.i];
    c.name = arg;
    c.inline_value.reset();
    if (auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      c.name = arg.substr(0, eq);
      c.inline_value = arg.substr(eq + 1);
    }
    auto r = apply_valued(o, c);
    if (!r) r = apply_flag(o, c);
    if (!*r) return std::unexpected(r->error());
  }
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
  return id;
}

}  // namespace ddp::check
