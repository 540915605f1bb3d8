// Option and environment parsing for ddp-check.
#include "options.hpp"

#include <charconv>
#include <cmath>
#include <string>

#include "rules.hpp"
#include "text.hpp"

namespace ddp::check {
namespace {

std::optional<double> parse_positive(std::string_view s) {
  if (s.empty() || !((s.front() >= '0' && s.front() <= '9') || s.front() == '.')) {
    return std::nullopt;
  }
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(value) || value <= 0) {
    return std::nullopt;
  }
  return value;
}

Result<double> parse_timeout(std::string_view what, std::string_view text) {
  auto value = parse_positive(text);
  if (!value || *value > 3600) {
    return fail(std::string(what) + "=\"" + std::string(text.substr(0, 40)) +
                "\": expected seconds, greater than 0 and at most 3600");
  }
  return *value;
}

Result<double> parse_busbw(std::string_view what, std::string_view text) {
  auto value = parse_positive(text);
  if (!value) {
    return fail(std::string(what) + "=\"" + std::string(text.substr(0, 40)) +
                "\": expected a bus bandwidth in GB/s greater than 0");
  }
  return *value;
}

Result<std::uint32_t> need_u32(const EnvLookup& env, std::string_view name, std::string_view hint) {
  auto value = env(name);
  if (!value) return fail(std::string(name) + " is not set" + std::string(hint));
  auto n = text::parse_uint<std::uint64_t>(*value);
  if (!n || *n > 0xffffffffull) {
    return fail(std::string(name) + "=\"" + value->substr(0, 40) +
                "\": expected a non-negative integer");
  }
  return static_cast<std::uint32_t>(*n);
}

Result<std::optional<std::uint32_t>> maybe_u32(const EnvLookup& env, std::string_view name) {
  if (!env(name)) return std::optional<std::uint32_t>{};
  auto n = need_u32(env, name, "");
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
         "  --no-nccl               skip the NCCL all-reduce phase\n"
         "  --nccl-min-busbw GBPS   fail when the all-reduce bus bandwidth is lower\n"
         "                          (env DDP_CHECK_NCCL_MIN_BUSBW)\n"
         "  --nccl-bytes N          all-reduce size in bytes (default 67108864)\n"
         "  --topology [FILE.xml]   print GPUs and network interfaces (hwloc) and exit\n"
         "  --route-to ADDR         with --topology: the interface that routes to ADDR\n"
         "  --help, --version\n"
         "\n"
         "DDP_CHECK_HOSTNAME overrides the host name a process reports (tests fake nodes).\n";
}

Result<Options> parse_options(std::span<const std::string_view> args, const EnvLookup& env) {
  Options o;
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
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    std::string_view name = arg;
    std::optional<std::string_view> inline_value;
    if (auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    auto value_of = [&](std::string_view option) -> Result<std::string_view> {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) return fail(std::string(option) + ": missing value");
      return args[++i];
    };
    auto no_value = [&]() -> Result<void> {
      if (inline_value) return fail(std::string(name) + " takes no value");
      return {};
    };
    if (name == "--timeout") {
      auto v = value_of(name);
      if (!v) return std::unexpected(v.error());
      auto t = parse_timeout("--timeout", *v);
      if (!t) return std::unexpected(t.error());
      o.timeout_s = *t;
    } else if (name == "--mode") {
      auto v = value_of(name);
      if (!v) return std::unexpected(v.error());
      if (*v == "tasks")
        o.scope = Scope::ranks;
      else if (*v == "torchrun")
        o.scope = Scope::nodes;
      else
        return fail("--mode=" + std::string(v->substr(0, 40)) +
                    ": unknown mode (valid: tasks, torchrun)");
    } else if (name == "--no-nccl") {
      if (auto r = no_value(); !r) return std::unexpected(r.error());
      o.nccl = false;
    } else if (name == "--nccl-min-busbw") {
      auto v = value_of(name);
      if (!v) return std::unexpected(v.error());
      auto b = parse_busbw("--nccl-min-busbw", *v);
      if (!b) return std::unexpected(b.error());
      o.nccl_min_busbw = *b;
    } else if (name == "--nccl-bytes") {
      auto v = value_of(name);
      if (!v) return std::unexpected(v.error());
      auto n = text::parse_uint<std::uint64_t>(*v);
      if (!n || *n < 4 || *n > (16ull << 30)) {
        return fail("--nccl-bytes=" + std::string(v->substr(0, 40)) +
                    ": expected a size in bytes from 4 to 17179869184");
      }
      o.nccl_bytes = *n;
    } else if (name == "--topology") {
      o.topology_live = true;
      if (inline_value) {
        o.topology = std::string(*inline_value);
        o.topology_live = false;
      } else if (i + 1 < args.size() && !args[i + 1].starts_with("-")) {
        o.topology = std::string(args[++i]);
        o.topology_live = false;
      }
    } else if (name == "--route-to") {
      auto v = value_of(name);
      if (!v) return std::unexpected(v.error());
      o.route_to = std::string(*v);
    } else if (name == "--help" || name == "-h") {
      o.help = true;
    } else if (name == "--version") {
      o.version = true;
    } else {
      return fail("unknown option \"" + std::string(arg.substr(0, 40)) + "\" (see --help)");
    }
  }
  if (o.route_to && !o.topology && !o.topology_live) {
    return fail("--route-to only goes with --topology");
  }
  return o;
}

Result<Identity> read_identity(const EnvLookup& env, std::optional<Scope> forced,
                               std::string_view hostname) {
  Identity id;
  constexpr std::string_view k_hint = " (run under `srun --ddp` or `srun --ddp=torchrun`)";
  if (forced) {
    id.scope = *forced;
  } else if (env("RANK")) {
    id.scope = Scope::ranks;
  } else if (env("NODE_RANK") && env("NNODES")) {
    id.scope = Scope::nodes;
  } else {
    return fail("neither RANK nor NODE_RANK and NNODES are set" + std::string(k_hint));
  }

  auto addr = env("MASTER_ADDR");
  if (!addr) addr = env("PET_MASTER_ADDR");
  if (!addr || addr->empty()) return fail("MASTER_ADDR is not set" + std::string(k_hint));
  id.master_addr = *addr;
  auto port_text = env("MASTER_PORT");
  if (!port_text) port_text = env("PET_MASTER_PORT");
  if (!port_text) return fail("MASTER_PORT is not set" + std::string(k_hint));
  auto port = parse_port(*port_text);
  if (!port) {
    return fail("MASTER_PORT=\"" + port_text->substr(0, 40) + "\": expected a port 1-65535");
  }
  id.master_port = *port;

  Hello& h = id.self;
  auto node_rank = maybe_u32(env, "NODE_RANK");
  if (!node_rank) return std::unexpected(node_rank.error());
  auto nnodes = maybe_u32(env, "NNODES");
  if (!nnodes) return std::unexpected(nnodes.error());
  h.node_rank = *node_rank;
  h.nnodes = *nnodes;
  if (id.scope == Scope::ranks) {
    for (auto [name, field] : {std::pair{"RANK", &h.rank}, std::pair{"WORLD_SIZE", &h.world_size},
                               std::pair{"LOCAL_RANK", &h.local_rank},
                               std::pair{"LOCAL_WORLD_SIZE", &h.local_world_size}}) {
      auto value = need_u32(env, name, k_hint);
      if (!value) return std::unexpected(value.error());
      *field = *value;
    }
  } else {
    if (!h.node_rank || !h.nnodes) return fail("NODE_RANK and NNODES must be set in torchrun mode");
    h.rank = *h.node_rank;
    h.world_size = *h.nnodes;
    h.local_rank = 0;
    h.local_world_size = 1;
    auto nproc = maybe_u32(env, "NPROC_PER_NODE");
    if (!nproc) return std::unexpected(nproc.error());
    h.nproc_per_node = nproc->value_or(1);
    if (h.nproc_per_node == 0) return fail("NPROC_PER_NODE=0: expected at least 1");
    auto world = maybe_u32(env, "WORLD_SIZE");
    if (!world) return std::unexpected(world.error());
    if (*world && std::uint64_t{**world} != std::uint64_t{*h.nnodes} * h.nproc_per_node) {
      return fail("WORLD_SIZE=" + std::to_string(**world) + " but NNODES*NPROC_PER_NODE=" +
                  std::to_string(std::uint64_t{*h.nnodes} * h.nproc_per_node));
    }
  }
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
  return id;
}

}  // namespace ddp::check
