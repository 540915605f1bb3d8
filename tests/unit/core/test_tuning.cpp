// socket_ifname=auto (the interface routing to MASTER_ADDR) and OMP_NUM_THREADS, table-driven.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "libddp/core/tuning.hpp"

namespace ddp {
namespace {

IpAddress ip(std::string_view text) {
  auto parsed = IpAddress::parse(text);
  EXPECT_TRUE(parsed) << text;
  return parsed.value_or(IpAddress{});
}

// A node with loopback, Ethernet, two IPoIB ports (one a VLAN-style child), a docker bridge.
std::vector<InterfaceAddress> node_interfaces() {
  return {{"lo", ip("127.0.0.1")},       {"lo", ip("::1")},         {"eth0", ip("10.77.3.11")},
          {"eth0", ip("fe80::1")},       {"ib0", ip("10.20.0.11")}, {"ib0.8001", ip("10.21.0.11")},
          {"docker0", ip("172.17.0.1")}, {"ib1", ip("fd00:20::11")}};
}

TEST(Tuning, ExactIfnameIsTheEqualsForm) {
  EXPECT_EQ(exact_ifname("eth0"), "=eth0");
  EXPECT_EQ(exact_ifname("ib0.8001"), "=ib0.8001");
}

TEST(Tuning, InterfaceForRouteNamesTheHolderOfTheSourceAddress) {
  struct Case {
    std::string_view source;
    std::string_view expected;
  };
  const Case cases[] = {
      {"10.77.3.11", "eth0"},  // a worker routing to the head over Ethernet
      {"10.20.0.11", "ib0"},   // IPoIB: the parent, not the child that shares the prefix
      {"10.21.0.11", "ib0.8001"}, {"fd00:20::11", "ib1"},  // IPv6
      {"172.17.0.1", "docker0"},  // whatever the kernel routes through, even a bridge
  };
  const auto interfaces = node_interfaces();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.source);
    auto name = interface_for_route(ip(c.source), interfaces, "10.77.3.11");
    ASSERT_TRUE(name) << name.error().message;
    EXPECT_EQ(*name, c.expected);
    EXPECT_EQ(socket_ifname_environment(*name),
              (EnvList{{"NCCL_SOCKET_IFNAME", "=" + std::string(c.expected)},
                       {"GLOO_SOCKET_IFNAME", std::string(c.expected)}}));
  }
}

TEST(Tuning, InterfaceForRouteRefusesLoopbackAndUnknownSources) {
  struct Case {
    std::string_view source;
    std::string_view message;
  };
  const Case cases[] = {
      {"127.0.0.1",
       "socket_ifname=auto: the route to MASTER_ADDR=node01 leaves through the loopback "
       "interface lo, which other nodes cannot reach; make the head node's name resolve to a "
       "routable address (addr=ip, networks=CIDR)"},
      {"127.0.1.1", "leaves through the loopback interface, which other nodes cannot reach"},
      {"::1", "leaves through the loopback interface lo,"},
      {"10.99.0.1",
       "socket_ifname=auto: the route to MASTER_ADDR=node01 uses source address 10.99.0.1, "
       "which no interface of this node holds (interfaces: eth0 10.77.3.11, eth0 fe80::1, ib0 "
       "10.20.0.11, ib0.8001 10.21.0.11, docker0 172.17.0.1, ib1 fd00:20::11)"},
  };
  const auto interfaces = node_interfaces();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.source);
    auto name = interface_for_route(ip(c.source), interfaces, "node01");
    ASSERT_FALSE(name) << *name;
    EXPECT_NE(name.error().message.find(c.message), std::string::npos) << name.error().message;
  }
  auto none = interface_for_route(ip("10.0.0.1"), {}, "10.0.0.2");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("(interfaces: none)"), std::string::npos);
}

TEST(Tuning, OmpNumThreads) {
  using S = std::optional<std::string_view>;
  struct Case {
    const char* what;
    OmpInputs in;
    std::optional<std::string> expected;
  };
  const Case cases[] = {
      {"the user's value is kept", {S("3"), S("8"), S("64"), 4, 64, 2, 1}, std::nullopt},
      {"an empty user value counts as unset", {S(""), S("8"), {}, 0, 0, 1, 1}, "8"},
      {"srun -c wins over the masks", {{}, S("8"), S("64"), 64, 64, 8, 1}, "8"},
      {"srun -c split among torchrun's workers", {{}, S("32"), {}, 0, 0, 1, 4}, "8"},
      {"srun -c smaller than the workers: 1", {{}, S("2"), {}, 0, 0, 1, 4}, "1"},
      {"a bound task uses its own mask", {{}, {}, S("64"), 4, 64, 16, 1}, "4"},
      {"unbound: the step's CPUs shared by local tasks", {{}, {}, S("64"), 64, 64, 8, 1}, "8"},
      {"unbound, the node claims more CPUs than exist", {{}, {}, S("8"), 2, 2, 2, 1}, "1"},
      {"unbound, one task on a 2-CPU machine", {{}, {}, S("8"), 2, 2, 1, 1}, "2"},
      {"cpuset wider than the allocation", {{}, {}, S("16"), 128, 128, 4, 1}, "4"},
      {"more tasks than CPUs: at least 1", {{}, {}, S("4"), 4, 4, 8, 1}, "1"},
      {"torchrun launcher: CPUs per worker", {{}, {}, S("64"), 64, 64, 1, 8}, "8"},
      {"only SLURM_CPUS_ON_NODE known", {{}, {}, S("12"), 0, 0, 3, 1}, "4"},
      {"only the task mask known", {{}, {}, {}, 6, 0, 2, 1}, "3"},
      {"garbage -c falls back to the masks", {{}, S("two"), S("x"), 8, 8, 2, 1}, "4"},
      {"-c 0 falls back to the masks", {{}, S("0"), {}, 8, 8, 1, 1}, "8"},
      {"nothing known: leave it alone", {{}, {}, {}, 0, 0, 1, 1}, std::nullopt},
      {"zero local tasks read as one", {{}, {}, {}, 4, 4, 0, 0}, "4"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(omp_num_threads(c.in), c.expected);
  }
}

}  // namespace
}  // namespace ddp
