// plugstack.conf arguments: every key, its defaults, and strict errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "libddp/core/config.hpp"

namespace ddp {
namespace {

Result<Config> parse(std::vector<std::string_view> args) {
  return parse_config(args);
}

TEST(Config, DefaultsWhenEmpty) {
  auto config = parse({});
  ASSERT_TRUE(config);
  EXPECT_EQ(config->port_range.first, 20000);
  EXPECT_EQ(config->port_range.last, 30999);
  EXPECT_EQ(config->address.mode, AddrMode::ip);
  EXPECT_EQ(config->address.host_suffix, "");
  EXPECT_EQ(config->address.host_domain, "");
  EXPECT_TRUE(config->address.networks.empty());
  EXPECT_EQ(config->address.family, Family::any);
  EXPECT_EQ(config->env_file, "");
  EXPECT_FALSE(config->env_override);
  EXPECT_TRUE(config->check_addr);
  EXPECT_TRUE(config->check_port);
  EXPECT_EQ(config->default_mode, Mode::tasks);
  EXPECT_EQ(config->resolve_timeout, 5u);
  EXPECT_FALSE(config->socket_ifname);
  EXPECT_TRUE(config->omp_num_threads);
}

TEST(Config, ParsesEveryKey) {
  auto config =
      parse({"port_range=40000-40999", "addr=hostname", "host_suffix=-ib",
             "host_domain=ib.cluster.example", "networks=10.1.0.0/16,fd00::/8", "family=ipv6",
             "env_file=/etc/slurm/ddp.env", "env_override=yes", "check_addr=no", "check_port=0",
             "default_mode=torchrun", "socket_ifname=auto", "omp_num_threads=no"});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->port_range.first, 40000);
  EXPECT_EQ(config->port_range.last, 40999);
  EXPECT_EQ(config->address.mode, AddrMode::hostname);
  EXPECT_EQ(config->address.host_suffix, "-ib");
  EXPECT_EQ(config->address.host_domain, "ib.cluster.example");
  ASSERT_EQ(config->address.networks.size(), 2u);
  EXPECT_EQ(config->address.networks[0].to_string(), "10.1.0.0/16");
  EXPECT_EQ(config->address.networks[1].to_string(), "fd00::/8");
  EXPECT_EQ(config->address.family, Family::ipv6);
  EXPECT_EQ(config->env_file, "/etc/slurm/ddp.env");
  EXPECT_TRUE(config->env_override);
  EXPECT_FALSE(config->check_addr);
  EXPECT_FALSE(config->check_port);
  EXPECT_EQ(config->default_mode, Mode::torchrun);
  EXPECT_EQ(parse_config(std::vector<std::string_view>{"resolve_timeout=30"})->resolve_timeout,
            30u);
  EXPECT_TRUE(config->socket_ifname);
  EXPECT_FALSE(config->omp_num_threads);
}

TEST(Config, AutoKeysTakeAutoOrNo) {
  struct Case {
    std::string_view arg;
    bool socket_ifname;
    bool omp_num_threads;
  };
  const Case cases[] = {{"socket_ifname=auto", true, true},
                        {"socket_ifname=no", false, true},
                        {"omp_num_threads=auto", false, true},
                        {"omp_num_threads=no", false, false}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.arg);
    auto config = parse({c.arg});
    ASSERT_TRUE(config) << config.error().message;
    EXPECT_EQ(config->socket_ifname, c.socket_ifname);
    EXPECT_EQ(config->omp_num_threads, c.omp_num_threads);
  }
}

TEST(Config, BooleansAcceptTheDocumentedSpellings) {
  struct Case {
    std::string_view arg;
    bool value;
  };
  const Case cases[] = {{"env_override=yes", true},    {"env_override=true", true},
                        {"env_override=1", true},      {"env_override=no", false},
                        {"env_override=false", false}, {"env_override=0", false}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.arg);
    auto config = parse({c.arg});
    ASSERT_TRUE(config) << config.error().message;
    EXPECT_EQ(config->env_override, c.value);
  }
}

TEST(Config, RejectsWithAMessageNamingTheCulprit) {
  struct Case {
    std::vector<std::string_view> args;
    std::string_view message;
  };
  const Case cases[] = {
      {{"foo=1"},
       "unknown plugstack.conf argument \"foo\" (valid: port_range, addr, host_suffix, "
       "host_domain, networks, family, env_file, env_override, check_addr, check_port, "
       "default_mode, socket_ifname, omp_num_threads, resolve_timeout)"},
      {{"port_rang=1-2"},
       "unknown plugstack.conf argument \"port_rang\" (did you mean \"port_range\"?"},
      {{"Family=ipv4"}, "(did you mean \"family\"?"},
      {{"verbose"},
       "plugstack.conf argument \"verbose\" is not key=value (valid keys: port_range,"},
      {{""}, "plugstack.conf argument \"\" is not key=value"},
      {{"=x"}, "unknown plugstack.conf argument \"\""},
      {{"family=ipv4", "family=ipv6"}, "plugstack.conf argument \"family\" is given twice"},
      {{"port_range=100-200"},
       "plugstack.conf argument port_range=\"100-200\": expected LOW-HIGH with 1024 <= LOW"},
      {{"port_range="}, "port_range=\"\": expected LOW-HIGH"},
      {{"addr=fqdn"}, "plugstack.conf argument addr=\"fqdn\": valid: ip, hostname"},
      {{"host_suffix=-i b"}, "host_suffix=\"-i b\": expected letters, digits, '-' or '_'"},
      {{"host_suffix=.ib"}, "host_suffix=\".ib\""},
      {{"host_suffix="}, "host_suffix=\"\""},
      {{"host_domain=.ib.cluster"}, "host_domain=\".ib.cluster\": expected a domain"},
      {{"host_domain=ib..cluster"}, "host_domain=\"ib..cluster\""},
      {{"networks=10.0.0.0/33"},
       "networks=\"10.0.0.0/33\": bad network \"10.0.0.0/33\": the prefix"},
      {{"networks=10.0.0.0/8,,fd00::/8"}, "bad network \"\": expected ADDRESS/PREFIX"},
      {{"networks="}, "networks=\"\": bad network"},
      {{"family=inet"}, "family=\"inet\": valid: any, ipv4, ipv6"},
      {{"env_file=ddp.env"}, "env_file=\"ddp.env\": expected an absolute path"},
      {{"env_file="}, "env_file=\"\": expected an absolute path"},
      {{"env_override=maybe"}, "env_override=\"maybe\": valid: yes, no, true, false, 1, 0"},
      {{"check_addr=YES"}, "check_addr=\"YES\": valid: yes, no"},
      {{"check_port="}, "check_port=\"\": valid"},
      {{"default_mode=mpi"}, "default_mode=\"mpi\": valid: tasks, torchrun"},
      {{"default_mode="}, "default_mode=\"\": valid: tasks, torchrun"},
      {{"resolve_timeout=0"}, "resolve_timeout=\"0\": expected seconds from 1 to 300"},
      {{"resolve_timeout=301"}, "resolve_timeout=\"301\": expected seconds from 1 to 300"},
      {{"resolve_timeout=5s"}, "resolve_timeout=\"5s\": expected seconds from 1 to 300"},
      {{"socket_ifname=eth0"}, "plugstack.conf argument socket_ifname=\"eth0\": valid: auto, no"},
      {{"socket_ifname=yes"}, "socket_ifname=\"yes\": valid: auto, no"},
      {{"socket_ifname="}, "socket_ifname=\"\": valid: auto, no"},
      {{"omp_num_threads=4"}, "omp_num_threads=\"4\": valid: auto, no"},
      {{"socket_ifname=auto", "socket_ifname=no"},
       "plugstack.conf argument \"socket_ifname\" is given twice"},
      {{"socket_ifnam=auto"}, "(did you mean \"socket_ifname\"?"},
      {{"omp_num_thread=auto"}, "(did you mean \"omp_num_threads\"?"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args.empty() ? "" : c.args.front());
    auto config = parse(c.args);
    ASSERT_FALSE(config);
    EXPECT_NE(config.error().message.find(c.message), std::string::npos) << config.error().message;
  }
}

}  // namespace
}  // namespace ddp
