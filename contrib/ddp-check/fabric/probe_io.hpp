// The edge of the fabric assertion: reads the facts from a sysfs tree and tries to load an NCCL
// net plugin. The sysfs root is a parameter, so that tests give each node a tree of its own.
#pragma once

#include <string>
#include <string_view>

#include "ddp-check/fabric/fabric.hpp"
#include "libddp/util/result.hpp"

namespace ddp::check {

// Default sysfs root of read_fabric_facts (ddp-check --sysfs-root overrides it).
inline constexpr std::string_view k_sysfs_root = "/sys";

// Reads class/infiniband/*/ports/*/{state,link_layer}, the devices' driver links,
// class/cxi/* with their device/net/*/operstate, and class/net/*/operstate under `root`.
// Missing directories are no facts, never an error.
FabricFacts read_fabric_facts(const std::string& root);

// Loads NCCL_NET_PLUGIN=`name` as NCCL would (net_plugin_files) and looks for a plugin symbol
// (net_plugin_symbols); the file that loaded, or an error naming every file tried and why.
Result<std::string> load_net_plugin(std::string_view name);

}  // namespace ddp::check
