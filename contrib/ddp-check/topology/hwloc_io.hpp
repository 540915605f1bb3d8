// A node's GPUs and network interfaces as hwloc sees them, from the live node or from an
// hwloc XML export (tests keep a few in tests/unit/check/topologies/ so that no GPU is needed).
#pragma once

#include <string>
#include <vector>

#include "ddp-check/topology/interfaces.hpp"
#include "libddp/util/result.hpp"

namespace ddp::check {

// One GPU: a PCI display or 3D controller by NVIDIA or AMD, or a CUDA device hwloc found.
struct Gpu {
  std::string name;       // first CUDA/NVML/... OS device ("cuda0"), else "gpu@BUSID"
  std::string pci_busid;  // "0000:07:00.0", empty if hwloc gives no PCI parent
  std::string model;      // GPUModel or PCIDevice info, empty if unknown
  int numa_node = -1;     // -1 if unknown or spanning several nodes
};

// What ddp-check and the environment policy need from a topology.
struct Topology {
  std::string host;  // HostName info of the machine, empty if absent
  unsigned pus = 0;  // processing units (hardware threads)
  unsigned numa_nodes = 0;
  std::vector<Gpu> gpus;                 // in PCI order
  std::vector<NetInterface> interfaces;  // network and OpenFabrics OS devices, in hwloc order
};

// Loads an hwloc XML file (v1 or v2 format) with every I/O object kept.
Result<Topology> load_topology_xml(const std::string& path);

// Discovers this node (PCI and OS devices included); takes a few hundred ms on large nodes.
Result<Topology> load_live_topology();

// Human-readable summary: one line per GPU and per interface, with locality.
std::string describe_topology(const Topology& topology);

}  // namespace ddp::check
