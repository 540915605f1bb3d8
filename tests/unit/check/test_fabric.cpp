// The fabric verdict from facts, the facts from a fake sysfs tree, and the net plugin loader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ddp-check/fabric/fabric.hpp"
#include "ddp-check/fabric/probe_io.hpp"

namespace ddp::check {
namespace {

namespace fs = std::filesystem;

TEST(Fabric, ParsesTheFourNames) {
  for (auto name : {"ib", "efa", "cxi", "socket"}) {
    auto f = parse_fabric(name);
    ASSERT_TRUE(f) << name;
    EXPECT_EQ(fabric_name(*f), name);
  }
  auto bad = parse_fabric("infiniband");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "unknown fabric \"infiniband\"; valid: ib, efa, cxi, socket");
  EXPECT_EQ(parse_fabric("efx").error().message,
            "unknown fabric \"efx\" (did you mean \"efa\"?); valid: ib, efa, cxi, socket");
}

TEST(Fabric, ChecksEachKindFromFacts) {
  const RdmaPort ib_up{"mlx5_0", "1", "4: ACTIVE", "InfiniBand", "mlx5_core"};
  const RdmaPort ib_down{"mlx5_1", "1", "1: DOWN", "InfiniBand", "mlx5_core"};
  const RdmaPort efa_up{"rdmap16s27", "1", "4: ACTIVE", "Ethernet", "efa"};
  struct Case {
    const char* name;
    Fabric fabric;
    FabricFacts facts;
    bool ok;
    std::string said;  // found when ok, else missing
  };
  const Case cases[] = {
      {"ib active",
       Fabric::ib,
       {{ib_down, ib_up}, {}, {}, {}},
       true,
       "mlx5_0 port 1 4: ACTIVE (InfiniBand)"},
      {"ib down",
       Fabric::ib,
       {{ib_down}, {}, {}, {}},
       false,
       "no InfiniBand port ACTIVE: mlx5_1 port 1 1: DOWN (InfiniBand)"},
      {"no ib at all", Fabric::ib, {}, false, "no InfiniBand device in /sys/class/infiniband"},
      {"an active RoCE port does not stand for a DOWN InfiniBand port",
       Fabric::ib,
       {{{"mlx5_0", "1", "1: DOWN", "InfiniBand", "mlx5_core"},
         {"mlx5_0", "2", "4: ACTIVE", "Ethernet", "mlx5_core"}},
        {},
        {},
        {}},
       false,
       "no InfiniBand port ACTIVE: mlx5_0 port 1 1: DOWN (InfiniBand), mlx5_0 port 2 4: ACTIVE "
       "(Ethernet)"},
      {"a port without a link_layer file (an old kernel) is InfiniBand",
       Fabric::ib,
       {{{"mlx4_0", "1", "4: ACTIVE", "", "mlx4_core"}}, {}, {}, {}},
       true,
       "mlx4_0 port 1 4: ACTIVE"},
      {"an efa device is not ib",
       Fabric::ib,
       {{efa_up}, {}, {}, {}},
       false,
       "no InfiniBand device in /sys/class/infiniband"},
      {"efa active",
       Fabric::efa,
       {{ib_up, efa_up}, {}, {}, {}},
       true,
       "rdmap16s27 port 1 4: ACTIVE (Ethernet)"},
      {"efa missing",
       Fabric::efa,
       {{ib_up}, {}, {}, {}},
       false,
       "no EFA device in /sys/class/infiniband"},
      {"cxi with its link up",
       Fabric::cxi,
       {{}, {"cxi0"}, {{"hsn0", "up"}}, {}},
       true,
       "cxi0 (hsn0 up)"},
      {"cxi with its link down",
       Fabric::cxi,
       {{}, {"cxi0"}, {{"hsn0", "down"}}, {}},
       false,
       "cxi0: no interface up in the CXI devices' net/: hsn0 down"},
      {"cxi without a listed link",
       Fabric::cxi,
       {{}, {"cxi0", "cxi1"}, {}, {}},
       true,
       "cxi0, cxi1"},
      {"no cxi", Fabric::cxi, {}, false, "no CXI device in /sys/class/cxi"},
      {"socket", Fabric::socket, {{}, {}, {}, {{"eth0", "down"}, {"eth1", "up"}}}, true, "eth1 up"},
      {"socket, all down",
       Fabric::socket,
       {{}, {}, {}, {{"eth0", "down"}}},
       false,
       "no interface up in /sys/class/net: eth0 down"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    FabricCheck r = check_fabric(c.fabric, c.facts);
    EXPECT_EQ(r.ok, c.ok);
    EXPECT_EQ(c.ok ? r.found : r.missing, c.said);
  }
}

class SysfsTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/ddp-fabric-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    root_ = dir;
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text << "\n";
  }
  fs::path root_;
};

TEST_F(SysfsTree, ReadsInfinibandCxiAndNet) {
  write("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE");
  write("class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand");
  write("class/infiniband/mlx5_0/ports/2/state", "1: DOWN");
  write("bus/pci/drivers/efa/.keep", "");
  write("class/infiniband/rdmap0/ports/1/state", "4: ACTIVE");
  fs::create_directories(root_ / "class/infiniband/rdmap0/device");
  fs::create_symlink(root_ / "bus/pci/drivers/efa",
                     root_ / "class/infiniband/rdmap0/device/driver");
  write("class/cxi/cxi0/device/net/hsn0/operstate", "up");
  write("class/net/lo/operstate", "unknown");
  write("class/net/eth0/operstate", "up");
  FabricFacts f = read_fabric_facts(root_.string());
  ASSERT_EQ(f.rdma_ports.size(), 3u);
  EXPECT_EQ(f.rdma_ports[0].device, "mlx5_0");
  EXPECT_EQ(f.rdma_ports[0].port, "1");
  EXPECT_EQ(f.rdma_ports[0].state, "4: ACTIVE");
  EXPECT_EQ(f.rdma_ports[0].link_layer, "InfiniBand");
  EXPECT_EQ(f.rdma_ports[0].driver, "");
  EXPECT_EQ(f.rdma_ports[1].state, "1: DOWN");
  EXPECT_EQ(f.rdma_ports[2].driver, "efa");
  EXPECT_EQ(f.cxi_devices, std::vector<std::string>{"cxi0"});
  ASSERT_EQ(f.cxi_links.size(), 1u);
  EXPECT_EQ(f.cxi_links[0].operstate, "up");
  ASSERT_EQ(f.links.size(), 1u);  // loopback left out
  EXPECT_EQ(f.links[0].name, "eth0");
  EXPECT_TRUE(check_fabric(Fabric::efa, f).ok);
  EXPECT_TRUE(check_fabric(Fabric::ib, f).ok);
}

TEST_F(SysfsTree, AnEmptyTreeHasNoFacts) {
  FabricFacts f = read_fabric_facts((root_ / "nothing-here").string());
  EXPECT_TRUE(f.rdma_ports.empty());
  EXPECT_TRUE(f.cxi_devices.empty());
  EXPECT_TRUE(f.links.empty());
  EXPECT_EQ(check_fabric(Fabric::socket, f).missing, "no interface in /sys/class/net");
}

TEST(NetPlugin, FilesInNcclsOrder) {
  EXPECT_EQ(net_plugin_files("ofi"), (std::vector<std::string>{"ofi", "libnccl-net-ofi.so"}));
  EXPECT_EQ(net_plugin_files(""), std::vector<std::string>{"libnccl-net.so"});
  EXPECT_EQ(net_plugin_symbols().front(), "ncclNetPlugin_v10");
  EXPECT_EQ(net_plugin_symbols().back(), "ncclNetPlugin_v2");
}

TEST(NetPlugin, LoadsAPluginAndRefusesTheRest) {
  auto ok = load_net_plugin(DDP_FAKE_NET_PLUGIN);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(*ok, DDP_FAKE_NET_PLUGIN);
  auto missing = load_net_plugin("ddp-no-such-plugin");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("libnccl-net-ddp-no-such-plugin.so ("), std::string::npos)
      << missing.error().message;
  // A library that loads but is no plugin.
  auto not_plugin = load_net_plugin("libm.so.6");
  ASSERT_FALSE(not_plugin);
  EXPECT_NE(not_plugin.error().message.find("libm.so.6 (loads, but exports no ncclNetPlugin_v*"),
            std::string::npos)
      << not_plugin.error().message;
}

}  // namespace
}  // namespace ddp::check
