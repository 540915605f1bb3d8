// The fabric verdict from sysfs facts, and the names NCCL looks for its net plugin under.
#include "ddp-check/fabric/fabric.hpp"

#include <array>

#include "libddp/util/text.hpp"

namespace ddp::check {
namespace {

constexpr std::array<std::string_view, 4> k_fabric_names = {"ib", "efa", "cxi", "socket"};

bool is_active(const RdmaPort& p) {
  // The state file reads "4: ACTIVE"; the number is the IB spec's port state.
  return p.state.find("ACTIVE") != std::string::npos;
}

std::string describe(const RdmaPort& p) {
  std::string state{text::trim(p.state)};
  std::string text = p.device + " port " + p.port + " " + (state.empty() ? "?" : state);
  if (!p.link_layer.empty()) text += " (" + std::string(text::trim(p.link_layer)) + ")";
  return text;
}

// Whether a port speaks InfiniBand: its link_layer says so (a RoCE port says "Ethernet");
// a kernel too old to have the file leaves it empty, and such a port is taken as InfiniBand.
bool is_infiniband(const RdmaPort& p) {
  const std::string_view layer = text::trim(p.link_layer);
  return layer.empty() || layer == "InfiniBand";
}

// The RDMA ports of one kind (efa, or InfiniBand proper): the first active one, or what was
// seen. An active RoCE port of the same HCA does not stand for a DOWN InfiniBand port.
FabricCheck check_rdma(const FabricFacts& facts, bool efa, const std::string& what) {
  std::vector<std::string> seen;
  for (const RdmaPort& p : facts.rdma_ports) {
    if ((p.driver == "efa") != efa) continue;
    if (!efa && !is_infiniband(p)) {
      seen.push_back(describe(p));
      continue;
    }
    if (is_active(p)) return {true, describe(p), ""};
    seen.push_back(describe(p));
  }
  if (seen.empty()) return {false, "", "no " + what + " device in /sys/class/infiniband"};
  return {false, "", "no " + what + " port ACTIVE: " + text::join(seen, ", ")};
}

FabricCheck check_links(const std::vector<Link>& links, const std::string& where) {
  std::vector<std::string> seen;
  for (const Link& l : links) {
    std::string state{text::trim(l.operstate)};
    if (state == "up") return {true, l.name + " up", ""};
    seen.push_back(l.name + " " + (state.empty() ? "?" : state));
  }
  if (seen.empty()) return {false, "", "no interface in " + where};
  return {false, "", "no interface up in " + where + ": " + text::join(seen, ", ")};
}

FabricCheck check_cxi(const FabricFacts& facts) {
  if (facts.cxi_devices.empty()) return {false, "", "no CXI device in /sys/class/cxi"};
  const std::string devices = text::join(facts.cxi_devices, ", ");
  // The Ethernet side tells whether the link is up; a driver that lists none is taken at its word.
  if (facts.cxi_links.empty()) return {true, devices, ""};
  FabricCheck links = check_links(facts.cxi_links, "the CXI devices' net/");
  if (!links.ok) return {false, "", devices + ": " + links.missing};
  return {true, devices + " (" + links.found + ")", ""};
}

}  // namespace

Result<Fabric> parse_fabric(std::string_view name) {
  for (std::size_t i = 0; i < k_fabric_names.size(); ++i) {
    if (name == k_fabric_names[i]) return static_cast<Fabric>(i);
  }
  std::string near = text::did_you_mean(name, k_fabric_names);
  return fail("unknown fabric " + text::quote(name) +
              (near.empty() ? "" : " (did you mean \"" + near + "\"?)") +
              "; valid: ib, efa, cxi, socket");
}

std::string_view fabric_name(Fabric fabric) {
  return k_fabric_names[static_cast<std::size_t>(fabric)];
}

FabricCheck check_fabric(Fabric fabric, const FabricFacts& facts) {
  switch (fabric) {
    case Fabric::ib:
      return check_rdma(facts, false, "InfiniBand");
    case Fabric::efa:
      return check_rdma(facts, true, "EFA");
    case Fabric::cxi:
      return check_cxi(facts);
    case Fabric::socket:
      return check_links(facts.links, "/sys/class/net");
  }
  return {};
}

std::vector<std::string> net_plugin_files(std::string_view name) {
  if (name.empty()) return {"libnccl-net.so"};
  return {std::string(name), "libnccl-net-" + std::string(name) + ".so"};
}

std::vector<std::string> net_plugin_symbols() {
  std::vector<std::string> out;
  for (int v = 10; v >= 2; --v) out.push_back("ncclNetPlugin_v" + std::to_string(v));
  return out;
}

}  // namespace ddp::check
