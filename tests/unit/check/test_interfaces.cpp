// Interface kinds, the `auto` NCCL_SOCKET_IFNAME choice and OMP_NUM_THREADS.
#include <gtest/gtest.h>

#include <vector>

#include "ddp-check/topology/interfaces.hpp"
#include "libddp/util/rules.hpp"

namespace ddp::check {
namespace {

TEST(Interfaces, ClassifiesByName) {
  struct Case {
    std::string_view name;
    bool rdma;
    NetKind kind;
  };
  const Case cases[] = {
      {"ib0", false, NetKind::infiniband},
      {"ib0.8001", false, NetKind::infiniband},
      {"mlx5_0", true, NetKind::infiniband},
      {"efa0", false, NetKind::efa},
      {"rdmap16s27", true, NetKind::efa},
      {"hsn0", false, NetKind::slingshot},
      {"cxi0", true, NetKind::slingshot},
      {"eth0", false, NetKind::ethernet},
      {"eno1", false, NetKind::ethernet},
      {"ens1f0np0", false, NetKind::ethernet},
      {"lo", false, NetKind::loopback},
      {"docker0", false, NetKind::virtual_bridge},
      {"veth12ab", false, NetKind::virtual_bridge},
      {"irdma0", true, NetKind::other},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(classify_interface(c.name, c.rdma), c.kind);
  }
}

NetInterface nic(std::string name, bool rdma = false) {
  NetInterface i;
  i.kind = classify_interface(name, rdma);
  i.name = std::move(name);
  i.rdma_device = rdma;
  return i;
}

TEST(Interfaces, ChoosesRouteThenBestKindInExactForm) {
  struct Case {
    std::vector<NetInterface> nics;
    std::optional<std::string_view> route;
    std::string expected;  // empty: an error
  };
  const Case cases[] = {
      {{nic("eno1"), nic("ib1"), nic("ib0"), nic("mlx5_0", true)}, std::nullopt, "=ib0"},
      {{nic("eno1"), nic("ib0")}, "eno1", "=eno1"},
      {{nic("lo"), nic("docker0"), nic("eth0")}, std::nullopt, "=eth0"},
      {{nic("eth0"), nic("hsn1"), nic("hsn0")}, std::nullopt, "=hsn0"},
      {{nic("lo"), nic("mlx5_0", true)}, std::nullopt, ""},
      {{}, std::nullopt, ""},
  };
  for (const auto& c : cases) {
    auto chosen = choose_socket_ifname(c.nics, c.route);
    if (c.expected.empty()) {
      ASSERT_FALSE(chosen);
      EXPECT_NE(chosen.error().message.find("no network interface for sockets"), std::string::npos);
    } else {
      ASSERT_TRUE(chosen) << chosen.error().message;
      EXPECT_EQ(*chosen, c.expected);
    }
  }
}

// ddp-check --topology reports the plugin's OMP_NUM_THREADS rule (rules.hpp) for what one
// process sees: its affinity mask, unless the user set the variable. With no CPU count at all
// the plugin leaves the variable alone, and ddp-check says "unknown" (it used to print 1).
TEST(Interfaces, OmpThreadsFromAffinityUnlessSet) {
  auto omp = [](std::optional<std::string_view> current, unsigned affinity) {
    OmpInputs in;
    in.current = current;
    in.task_cpus = affinity;
    return omp_num_threads(in);
  };
  EXPECT_EQ(omp(std::nullopt, 12), "12");
  EXPECT_EQ(omp(std::string_view(""), 4), "4");
  EXPECT_EQ(omp(std::nullopt, 0), std::nullopt);
  EXPECT_EQ(omp(std::string_view("2"), 12), std::nullopt);
}

}  // namespace
}  // namespace ddp::check
