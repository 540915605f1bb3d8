// hwloc walk: PCI devices that are GPUs, OS devices that are network interfaces, locality.
#include "ddp-check/topology/hwloc_io.hpp"

#include <hwloc.h>

#include <cstdio>
#include <memory>
#include <string>

namespace ddp::check {
namespace {

constexpr unsigned k_vendor_nvidia = 0x10de;
constexpr unsigned k_vendor_amd = 0x1002;

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

std::string busid(hwloc_obj_t pci) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain,
                pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
  return buf;
}

std::string info(hwloc_obj_t obj, const char* name) {
  const char* value = hwloc_obj_get_info_by_name(obj, name);
  return value ? value : "";
}

int numa_of(hwloc_topology_t topo, hwloc_obj_t obj) {
  hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(topo, obj);
  if (!anchor || !anchor->nodeset || hwloc_bitmap_weight(anchor->nodeset) != 1) return -1;
  return hwloc_bitmap_first(anchor->nodeset);
}

bool is_gpu_osdev(hwloc_obj_t osdev) {
  const char* sub = osdev->subtype;
  const std::string subtype = sub ? sub : "";
  auto type = osdev->attr->osdev.type;
  if (type == HWLOC_OBJ_OSDEV_COPROC) return subtype == "CUDA" || subtype == "OpenCL";
  if (type == HWLOC_OBJ_OSDEV_GPU) return subtype == "NVML" || subtype == "RSMI";
  return false;
}

bool is_gpu_pci(hwloc_obj_t pci) {
  const unsigned cls = pci->attr->pcidev.class_id;
  const unsigned vendor = pci->attr->pcidev.vendor_id;
  const bool display = cls == 0x0300 || cls == 0x0302 || cls == 0x0380;
  if (display && (vendor == k_vendor_nvidia || vendor == k_vendor_amd)) return true;
  for (hwloc_obj_t child = pci->io_first_child; child; child = child->next_sibling) {
    if (child->type == HWLOC_OBJ_OS_DEVICE && is_gpu_osdev(child)) return true;
  }
  return false;
}

// The PCI device an OS device hangs off, or nullptr.
hwloc_obj_t pci_parent(hwloc_obj_t obj) {
  hwloc_obj_t parent = obj->parent;
  return parent && parent->type == HWLOC_OBJ_PCI_DEVICE ? parent : nullptr;
}

// The closest common ancestor. Written out because hwloc_get_common_ancestor_obj() compares
// depths, which are negative (virtual) for I/O objects.
hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b) {
  for (hwloc_obj_t x = a; x; x = x->parent) {
    for (hwloc_obj_t y = b; y; y = y->parent) {
      if (x == y) return x;
    }
  }
  return nullptr;
}

// True when a and b sit behind the same PCIe switch (their common ancestor is a PCI bridge).
bool same_switch(hwloc_obj_t a, hwloc_obj_t b) {
  hwloc_obj_t common = common_ancestor(a, b);
  return common && common->type == HWLOC_OBJ_BRIDGE &&
         common->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI;
}

// The GPUs of the topology into `t.gpus`, and their hwloc objects in the same order.
std::vector<hwloc_obj_t> walk_gpus(hwloc_topology_t topo, Topology& t) {
  std::vector<hwloc_obj_t> gpu_objs;
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci;
       pci = hwloc_get_next_pcidev(topo, pci)) {
    if (!is_gpu_pci(pci)) continue;
    Gpu g;
    g.pci_busid = busid(pci);
    g.model = info(pci, "PCIDevice");
    for (hwloc_obj_t child = pci->io_first_child; child; child = child->next_sibling) {
      if (child->type != HWLOC_OBJ_OS_DEVICE || !is_gpu_osdev(child)) continue;
      if (g.name.empty()) g.name = child->name ? child->name : "";
      if (auto model = info(child, "GPUModel"); !model.empty()) g.model = model;
    }
    if (g.name.empty()) g.name = "gpu@" + g.pci_busid;
    g.numa_node = numa_of(topo, pci);
    t.gpus.push_back(std::move(g));
    gpu_objs.push_back(pci);
  }
  // CUDA devices without a PCI parent in the topology (PCI discovery off): one GPU each.
  for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os;
       os = hwloc_get_next_osdev(topo, os)) {
    if (pci_parent(os) || os->attr->osdev.type != HWLOC_OBJ_OSDEV_COPROC || !os->subtype ||
        std::string(os->subtype) != "CUDA") {
      continue;
    }
    t.gpus.push_back(
        Gpu{os->name ? os->name : "cuda?", "", info(os, "GPUModel"), numa_of(topo, os)});
    gpu_objs.push_back(os);
  }
  return gpu_objs;
}

// The GPUs nearest to a NIC at `anchor`: behind the same PCIe switch (GPUDirect RDMA at full
// speed), else on the same NUMA node / package.
std::vector<std::string> near_gpus(hwloc_topology_t topo, hwloc_obj_t anchor, const Topology& t,
                                   const std::vector<hwloc_obj_t>& gpu_objs) {
  std::vector<std::string> near;
  for (std::size_t i = 0; i < gpu_objs.size(); ++i) {
    if (same_switch(anchor, gpu_objs[i])) near.push_back(t.gpus[i].name);
  }
  if (!near.empty()) return near;
  hwloc_obj_t mine = hwloc_get_non_io_ancestor_obj(topo, anchor);
  for (std::size_t i = 0; i < gpu_objs.size(); ++i) {
    if (hwloc_get_non_io_ancestor_obj(topo, gpu_objs[i]) == mine) near.push_back(t.gpus[i].name);
  }
  return near;
}

Topology walk(hwloc_topology_t topo) {
  Topology t;
  hwloc_obj_t root = hwloc_get_root_obj(topo);
  t.host = info(root, "HostName");
  t.pus = static_cast<unsigned>(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU));
  t.numa_nodes = static_cast<unsigned>(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE));
  const std::vector<hwloc_obj_t> gpu_objs = walk_gpus(topo, t);
  for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os;
       os = hwloc_get_next_osdev(topo, os)) {
    const auto type = os->attr->osdev.type;
    if (type != HWLOC_OBJ_OSDEV_NETWORK && type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
    NetInterface nic;
    nic.name = os->name ? os->name : "?";
    nic.rdma_device = type == HWLOC_OBJ_OSDEV_OPENFABRICS;
    nic.kind = classify_interface(nic.name, nic.rdma_device);
    nic.numa_node = numa_of(topo, os);
    hwloc_obj_t anchor = pci_parent(os);
    if (anchor) nic.pci_busid = busid(anchor);
    if (!anchor) anchor = os;
    nic.near_gpus = near_gpus(topo, anchor, t, gpu_objs);
    t.interfaces.push_back(std::move(nic));
  }
  return t;
}

Result<TopologyPtr> make_topology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return fail("hwloc: cannot initialise a topology");
  return TopologyPtr(raw);
}

}  // namespace

Result<Topology> load_topology_xml(const std::string& path) {
  auto topo = make_topology();
  if (!topo) return std::unexpected(topo.error());
  if (hwloc_topology_set_xml(topo->get(), path.c_str()) != 0) {
    return fail("hwloc: cannot read topology XML " + path + " (missing or not hwloc XML)");
  }
  hwloc_topology_set_io_types_filter(topo->get(), HWLOC_TYPE_FILTER_KEEP_ALL);
  if (hwloc_topology_load(topo->get()) != 0) {
    return fail("hwloc: cannot load topology XML " + path + " (malformed?)");
  }
  return walk(topo->get());
}

Result<Topology> load_live_topology() {
  auto topo = make_topology();
  if (!topo) return std::unexpected(topo.error());
  hwloc_topology_set_io_types_filter(topo->get(), HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topo->get()) != 0)
    return fail("hwloc: cannot discover this node's topology");
  return walk(topo->get());
}

std::string describe_topology(const Topology& t) {
  std::string out;
  auto numa = [](int n) { return n < 0 ? std::string("NUMA ?") : "NUMA " + std::to_string(n); };
  out += "host " + (t.host.empty() ? std::string("?") : t.host) + ": " + std::to_string(t.pus) +
         " PUs, " + std::to_string(t.numa_nodes) + " NUMA nodes, " + std::to_string(t.gpus.size()) +
         " GPUs, " + std::to_string(t.interfaces.size()) + " network devices\n";
  for (const auto& g : t.gpus) {
    out += "  gpu  " + g.name + "  " + (g.pci_busid.empty() ? "-" : g.pci_busid) + "  " +
           numa(g.numa_node) + (g.model.empty() ? "" : "  " + g.model) + "\n";
  }
  for (const auto& i : t.interfaces) {
    out += "  net  " + i.name + "  " + std::string(kind_name(i.kind)) +
           (i.rdma_device ? " (rdma)" : "") + "  " + (i.pci_busid.empty() ? "-" : i.pci_busid) +
           "  " + numa(i.numa_node);
    if (!i.near_gpus.empty()) {
      out += "  near";
      for (const auto& g : i.near_gpus) out += " " + g;
    }
    out += "\n";
  }
  return out;
}

}  // namespace ddp::check
