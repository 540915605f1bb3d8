// The hwloc reader on hand-made XML topologies (tests/unit/check/topologies, see
// make_topologies.py): GPUs counted once per device, interfaces classified, locality and the `auto`
// interface.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ddp-check/topology/hwloc_io.hpp"

namespace ddp::check {
namespace {

Topology load(const std::string& name) {
  auto topo = load_topology_xml(std::string(DDP_TOPOLOGIES_DIR) + "/" + name);
  EXPECT_TRUE(topo) << topo.error().message;
  return topo ? *topo : Topology{};
}

std::vector<std::string> names_of_kind(const Topology& t, NetKind kind, bool rdma) {
  std::vector<std::string> out;
  for (const auto& i : t.interfaces) {
    if (i.kind == kind && i.rdma_device == rdma) out.push_back(i.name);
  }
  return out;
}

const NetInterface* find(const Topology& t, std::string_view name) {
  for (const auto& i : t.interfaces) {
    if (i.name == name) return &i;
  }
  return nullptr;
}

TEST(Topology, EightGpusFourInfiniBand) {
  Topology t = load("gpu8-ib4.xml");
  EXPECT_EQ(t.host, "dgx-a100-01");
  EXPECT_EQ(t.pus, 16u);
  EXPECT_EQ(t.numa_nodes, 2u);
  ASSERT_EQ(t.gpus.size(), 8u);  // CUDA + NVML devices of one GPU count once; the BMC VGA never
  EXPECT_EQ(t.gpus[0].name, "cuda0");
  EXPECT_EQ(t.gpus[0].pci_busid, "0000:11:00.0");
  EXPECT_EQ(t.gpus[0].model, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(t.gpus[0].numa_node, 0);
  EXPECT_EQ(t.gpus[7].numa_node, 1);
  EXPECT_EQ(names_of_kind(t, NetKind::infiniband, false),
            (std::vector<std::string>{"ib0", "ib1", "ib2", "ib3"}));
  EXPECT_EQ(names_of_kind(t, NetKind::infiniband, true),
            (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}));
  EXPECT_EQ(names_of_kind(t, NetKind::ethernet, false), std::vector<std::string>{"eno1"});

  const NetInterface* mlx5_2 = find(t, "mlx5_2");
  ASSERT_NE(mlx5_2, nullptr);
  EXPECT_EQ(mlx5_2->numa_node, 1);
  EXPECT_EQ(mlx5_2->pci_busid, "0000:53:00.0");
  EXPECT_EQ(mlx5_2->near_gpus, (std::vector<std::string>{"cuda4", "cuda5"}));  // same switch
  const NetInterface* eno1 = find(t, "eno1");
  ASSERT_NE(eno1, nullptr);
  EXPECT_EQ(eno1->near_gpus, (std::vector<std::string>{"cuda0", "cuda1", "cuda2", "cuda3"}));

  EXPECT_EQ(choose_socket_ifname(t.interfaces, std::nullopt).value(), "=ib0");
  EXPECT_EQ(choose_socket_ifname(t.interfaces, "eno1").value(), "=eno1");
}

TEST(Topology, FourV100OneEthernet) {
  Topology t = load("v100x4-eth.xml");
  ASSERT_EQ(t.gpus.size(), 4u);
  EXPECT_EQ(t.gpus[3].name, "cuda3");
  EXPECT_EQ(t.gpus[3].model, "Tesla V100-PCIE-16GB");
  ASSERT_EQ(t.interfaces.size(), 1u);
  EXPECT_EQ(t.interfaces[0].name, "ens1f0");
  EXPECT_EQ(t.interfaces[0].kind, NetKind::ethernet);
  EXPECT_EQ(t.interfaces[0].numa_node, 0);
  EXPECT_EQ(t.interfaces[0].near_gpus.size(), 4u);  // same package, not behind the switch
  EXPECT_EQ(choose_socket_ifname(t.interfaces, std::nullopt).value(), "=ens1f0");
}

TEST(Topology, CpuOnlyWithSlingshot) {
  Topology t = load("cpu-only.xml");
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_EQ(t.pus, 8u);
  EXPECT_EQ(names_of_kind(t, NetKind::ethernet, false), std::vector<std::string>{"eth0"});
  EXPECT_EQ(names_of_kind(t, NetKind::slingshot, false), std::vector<std::string>{"hsn0"});
  EXPECT_EQ(names_of_kind(t, NetKind::slingshot, true), std::vector<std::string>{"cxi0"});
  EXPECT_EQ(find(t, "hsn0")->numa_node, 1);
  EXPECT_TRUE(find(t, "hsn0")->near_gpus.empty());
  EXPECT_EQ(choose_socket_ifname(t.interfaces, std::nullopt).value(), "=hsn0");
}

TEST(Topology, MissingOrBrokenFileIsAnError) {
  auto missing = load_topology_xml("/nonexistent/topology.xml");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("/nonexistent/topology.xml"), std::string::npos);
  auto broken = load_topology_xml(std::string(DDP_TOPOLOGIES_DIR) + "/make_topologies.py");
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find("hwloc: cannot"), std::string::npos);
}

TEST(Topology, DescribesTheNode) {
  Topology t = load("v100x4-eth.xml");
  std::string text = describe_topology(t);
  EXPECT_NE(text.find("host v100-node: 4 PUs, 1 NUMA nodes, 4 GPUs, 1 network devices"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("  net  ens1f0  ethernet  0000:30:00.0  NUMA 0  near cuda0 cuda1 cuda2 cuda3"),
      std::string::npos)
      << text;
}

TEST(Topology, LiveNodeLoads) {
  auto live = load_live_topology();
  ASSERT_TRUE(live) << live.error().message;
  EXPECT_GE(live->pus, 1u);
}

}  // namespace
}  // namespace ddp::check
