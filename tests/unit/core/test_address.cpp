// MASTER_ADDR policy: address text, networks, name rewriting and the choice among candidates.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "libddp/core/address.hpp"

namespace ddp {
namespace {

IpAddress ip(std::string_view text) {
  auto address = IpAddress::parse(text);
  EXPECT_TRUE(address) << text;
  return address.value_or(IpAddress{});
}

Cidr net(std::string_view text) {
  auto cidr = Cidr::parse(text);
  EXPECT_TRUE(cidr) << text;
  return cidr.value_or(Cidr{});
}

TEST(IpAddress, ParsesAndPrintsCanonically) {
  struct Case {
    std::string_view text;
    Family family;
    std::string_view canonical;
    bool loopback;
  };
  const Case cases[] = {
      {"10.1.2.3", Family::ipv4, "10.1.2.3", false},
      {"127.0.0.1", Family::ipv4, "127.0.0.1", true},
      {"127.0.1.1", Family::ipv4, "127.0.1.1", true},
      {"128.0.0.1", Family::ipv4, "128.0.0.1", false},
      {"::1", Family::ipv6, "::1", true},
      {"0:0:0:0:0:0:0:1", Family::ipv6, "::1", true},
      {"::2", Family::ipv6, "::2", false},
      {"fd00:0::0001", Family::ipv6, "fd00::1", false},
      {"::ffff:127.0.0.1", Family::ipv6, "::ffff:127.0.0.1", true},
      {"::ffff:10.0.0.1", Family::ipv6, "::ffff:10.0.0.1", false},
      {"FE80::1", Family::ipv6, "fe80::1", false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto a = IpAddress::parse(c.text);
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(a->family, c.family);
    EXPECT_EQ(a->to_string(), c.canonical);
    EXPECT_EQ(a->is_loopback(), c.loopback);
    EXPECT_EQ(IpAddress::parse(a->to_string()).value_or(IpAddress{}), *a);
  }
}

TEST(IpAddress, RejectsNonAddresses) {
  const std::string_view cases[] = {
      "",
      "node1",
      "10.0.0",
      "10.0.0.256",
      "10.0.0.1 ",
      " 10.0.0.1",
      "fe80::1%eth0",
      ":::",
      std::string_view("10.0.0.1\0x", 10),
      "1234567890123456789012345678901234567890123456789012345678901234567890",
  };
  for (std::string_view text : cases) {
    SCOPED_TRACE(text);
    auto a = IpAddress::parse(text);
    ASSERT_FALSE(a);
    EXPECT_NE(a.error().message.find("bad IP address \""), std::string::npos);
  }
}

TEST(Cidr, ParsesMasksAndContains) {
  struct Case {
    std::string_view cidr;
    std::string_view canonical;
    std::vector<std::string_view> inside;
    std::vector<std::string_view> outside;
  };
  const Case cases[] = {
      {"10.1.0.0/16", "10.1.0.0/16", {"10.1.0.0", "10.1.255.255"}, {"10.2.0.1", "::ffff:10.1.0.1"}},
      {"10.1.2.3/16", "10.1.0.0/16", {"10.1.9.9"}, {"10.0.9.9"}},
      {"192.168.1.128/25", "192.168.1.128/25", {"192.168.1.200"}, {"192.168.1.127"}},
      {"0.0.0.0/0", "0.0.0.0/0", {"1.2.3.4", "127.0.0.1"}, {"::1"}},
      {"10.0.0.7/32", "10.0.0.7/32", {"10.0.0.7"}, {"10.0.0.6"}},
      {"fd00::/8", "fd00::/8", {"fd12:3456::1", "fdff::"}, {"fe00::1", "10.0.0.1"}},
      {"2001:db8::/33", "2001:db8::/33", {"2001:db8:7fff::1"}, {"2001:db8:8000::1"}},
      {"::/0", "::/0", {"::1", "fe80::1"}, {"10.0.0.1"}},
      {"fe80::1/128", "fe80::1/128", {"fe80::1"}, {"fe80::2"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.cidr);
    auto cidr = Cidr::parse(c.cidr);
    ASSERT_TRUE(cidr) << cidr.error().message;
    EXPECT_EQ(cidr->to_string(), c.canonical);
    for (auto a : c.inside) EXPECT_TRUE(cidr->contains(ip(a))) << a;
    for (auto a : c.outside) EXPECT_FALSE(cidr->contains(ip(a))) << a;
  }
}

TEST(Cidr, RejectsBadNetworks) {
  struct Case {
    std::string_view text;
    std::string_view message;
  };
  const Case cases[] = {
      {"10.0.0.0", "bad network \"10.0.0.0\": expected ADDRESS/PREFIX"},
      {"10.0.0.0/33", "the prefix must be 0 to 32"},
      {"fd00::/129", "the prefix must be 0 to 128"},
      {"10.0.0.0/", "the prefix must be 0 to 32"},
      {"10.0.0.0/-1", "the prefix must be 0 to 32"},
      {"10.0.0.0/8x", "the prefix must be 0 to 32"},
      {"node1/8", "\"node1\" is not an IP address"},
      {"/8", "\"\" is not an IP address"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto cidr = Cidr::parse(c.text);
    ASSERT_FALSE(cidr);
    EXPECT_NE(cidr.error().message.find(c.message), std::string::npos) << cidr.error().message;
  }
}

TEST(RewriteHost, SuffixAfterFirstLabelDomainOnlyForShortNames) {
  struct Case {
    std::string_view host;
    std::string suffix;
    std::string domain;
    std::string_view expected;
  };
  const Case cases[] = {
      {"n1", "", "", "n1"},
      {"n1", "-ib", "", "n1-ib"},
      {"n1", "", "ib.cluster", "n1.ib.cluster"},
      {"n1", "-ib", "ib.cluster", "n1-ib.ib.cluster"},
      {"n1.cl", "-ib", "", "n1-ib.cl"},
      {"n1.cl", "-ib", "ib.cluster", "n1-ib.cl"},
      {"n1.cl", "", "ib.cluster", "n1.cl"},
      {"node001", "i", "", "node001i"},
      {"10.0.0.1", "-ib", "ib.cluster", "10.0.0.1"},
      {"fd00::1", "-ib", "x", "fd00::1"},
      {"", "-ib", "x", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.host);
    AddressPolicy policy;
    policy.host_suffix = c.suffix;
    policy.host_domain = c.domain;
    EXPECT_EQ(rewrite_host(c.host, policy), c.expected);
  }
}

struct ChooseCase {
  std::string_view name;
  std::vector<std::string_view> candidates;
  std::vector<std::string_view> networks;
  Family family;
  std::string_view chosen;   // empty: an error
  std::string_view message;  // substring of the error
};

TEST(ChooseAddress, IgnoresResolverOrder) {
  // Every permutation of one answer gives the same address: nodes whose resolvers sort the head's
  // addresses differently (RFC 6724, gai.conf, rotating DNS) still agree on MASTER_ADDR.
  std::vector<IpAddress> candidates{ip("fe80::77:11"), ip("192.168.5.11"), ip("fd00::11"),
                                    ip("172.30.5.11"), ip("10.77.5.11")};
  std::sort(candidates.begin(), candidates.end(),
            [](const IpAddress& a, const IpAddress& b) { return a.bytes < b.bytes; });
  AddressPolicy policy;
  do {
    auto chosen = choose_address(candidates, policy, "node1");
    ASSERT_TRUE(chosen);
    ASSERT_EQ(chosen->to_string(), "10.77.5.11");
  } while (std::next_permutation(
      candidates.begin(), candidates.end(),
      [](const IpAddress& a, const IpAddress& b) { return a.bytes < b.bytes; }));
}

TEST(ChooseAddress, AppliesLoopbackNetworksAndFamily) {
  // One row per case reads better than one field per line.
  // clang-format off
  const ChooseCase cases[] = {
      {"lowest non-loopback", {"127.0.1.1", "10.1.0.5", "10.0.0.5"}, {}, Family::any, "10.0.0.5", ""},
      {"IPv4 first under family=any", {"fd00::5", "10.0.0.5"}, {}, Family::any, "10.0.0.5", ""},
      {"link-local never", {"fe80::1", "169.254.0.9", "fd00::7"}, {}, Family::any, "fd00::7", ""},
      {"only link-local", {"fe80::1", "169.254.0.9"}, {}, Family::any, "",
       "resolved to fe80::1 (link-local), 169.254.0.9 (link-local)"},
      {"earliest network first", {"10.0.0.5", "172.16.0.5", "192.168.1.5"},
       {"192.168.0.0/16", "172.16.0.0/12"}, Family::any, "192.168.1.5", ""},
      {"networks filter", {"10.0.0.5", "192.168.1.5"}, {"192.168.0.0/16"}, Family::any,
       "192.168.1.5", ""},
      {"any of several networks", {"10.0.0.5", "172.16.0.5"}, {"192.168.0.0/16", "172.16.0.0/12"},
       Family::any, "172.16.0.5", ""},
      {"ipv4 preferred", {"fd00::5", "10.0.0.5"}, {}, Family::ipv4, "10.0.0.5", ""},
      {"ipv6 preferred", {"10.0.0.5", "fd00::6", "fd00::5"}, {}, Family::ipv6, "fd00::5", ""},
      {"ipv6 preferred, only v4 left", {"10.0.0.5", "::1"}, {}, Family::ipv6, "10.0.0.5", ""},
      {"ipv4 preferred, v4 only loopback", {"127.0.0.1", "fd00::5"}, {}, Family::ipv4, "fd00::5", ""},
      {"preferred family filtered by networks", {"10.0.0.5", "fd00::5"}, {"fd00::/8"}, Family::ipv4,
       "fd00::5", ""},
      {"loopback even inside networks", {"127.0.0.1"}, {"127.0.0.0/8"}, Family::any, "",
       "resolved to 127.0.0.1 (loopback)"},
      {"only loopback", {"127.0.1.1"}, {}, Family::any, "",
       "no usable address for \"node1\": resolved to 127.0.1.1 (loopback); set networks=CIDR in "
       "plugstack.conf or fix /etc/hosts"},
      {"v4-mapped loopback", {"::ffff:127.0.0.1", "::1"}, {}, Family::any, "",
       "resolved to ::ffff:127.0.0.1 (loopback), ::1 (loopback)"},
      {"outside networks", {"10.0.0.5", "127.0.1.1"}, {"192.168.0.0/16", "fd00::/8"}, Family::any, "",
       "resolved to 10.0.0.5 (outside networks=192.168.0.0/16,fd00::/8), 127.0.1.1 (loopback); fix "
       "networks= in plugstack.conf"},
      {"nothing resolved", {}, {}, Family::any, "",
       "no usable address for \"node1\": it resolved to no address"},
  };
  // clang-format on
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<IpAddress> candidates;
    for (auto a : c.candidates) candidates.push_back(ip(a));
    AddressPolicy policy;
    for (auto n : c.networks) policy.networks.push_back(net(n));
    policy.family = c.family;
    auto chosen = choose_address(candidates, policy, "node1");
    if (c.chosen.empty()) {
      ASSERT_FALSE(chosen);
      EXPECT_NE(chosen.error().message.find(c.message), std::string::npos)
          << chosen.error().message;
    } else {
      ASSERT_TRUE(chosen) << chosen.error().message;
      EXPECT_EQ(chosen->to_string(), c.chosen);
    }
  }
}

}  // namespace
}  // namespace ddp
