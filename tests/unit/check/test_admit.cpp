// Rank 0's admission of hellos: the step binding, the credential checks, the refusal texts,
// and where munged's socket is found.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "ddp-check/rendezvous/admit.hpp"

namespace ddp::check {
namespace {

Hello claim(std::string job, std::string step, AuthMode auth = AuthMode::munge) {
  Hello h;
  h.rank = 1;
  h.world_size = 4;
  h.host = "node02";
  h.pid = 77;
  h.job = std::move(job);
  h.step = std::move(step);
  h.auth = auth;
  h.port = 29500;
  return h;
}

TEST(Admit, BindingRefusesOtherJobsAndStepsAndUnsignedHellos) {
  const StepBinding own{"812", "3", "-", 29500};
  Hello other_port = claim("812", "3");
  other_port.port = 29501;
  struct Case {
    Hello hello;
    AuthMode mode;
    std::string refusal;  // empty: admitted
  };
  const Case cases[] = {
      {claim("812", "3"), AuthMode::munge, ""},
      {claim("811", "3"), AuthMode::munge,
       "it belongs to job 811 step 3, this check is job 812 step 3"},
      {claim("812", "2"), AuthMode::munge,
       "it belongs to job 812 step 2, this check is job 812 step 3"},
      {claim("-", "-"), AuthMode::munge,
       "it belongs to no Slurm job, this check is job 812 step 3"},
      {claim("812", "3", AuthMode::none), AuthMode::munge, "it carries no MUNGE credential"},
      {claim("812", "3", AuthMode::none), AuthMode::none, ""},
      {other_port, AuthMode::munge,
       "it was sent to MASTER_PORT 29501, this check listens on 29500"},
      {claim("811", "3", AuthMode::none), AuthMode::none, "it belongs to job 811 step 3"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.hello.job + "." + c.hello.step);
    auto why = binding_refusal(c.hello, own, c.mode);
    if (c.refusal.empty()) {
      EXPECT_FALSE(why) << *why;
    } else {
      ASSERT_TRUE(why);
      EXPECT_TRUE(why->starts_with(c.refusal)) << *why;
    }
  }
}

TEST(Admit, CredentialMustBeThisUsersAndSignThisLine) {
  const std::string line = "ddp-check/2 hello rank=1 job=812 step=3";
  Result<Credential> good = Credential{1000, 1000, line};
  EXPECT_FALSE(credential_refusal(good, line, 1000));

  Result<Credential> other_user = Credential{1001, 1001, line};
  EXPECT_EQ(credential_refusal(other_user, line, 1000),
            "its credential is of uid 1001, this job runs as uid 1000");

  Result<Credential> other_line = Credential{1000, 1000, "ddp-check/2 hello rank=2 job=812 step=3"};
  auto why = credential_refusal(other_line, line, 1000);
  ASSERT_TRUE(why);
  EXPECT_TRUE(why->starts_with("its credential signs another hello")) << *why;

  Result<Credential> replayed = fail("a replayed credential (MUNGE decoded it before)");
  EXPECT_EQ(credential_refusal(replayed, line, 1000),
            "MUNGE refused its credential: a replayed credential (MUNGE decoded it before)");
}

TEST(Admit, RefusalsNameThePeerAndWhatItClaimedPrintably) {
  Hello h = claim("811", "0");
  h.host = "node02";
  EXPECT_EQ(describe_refusal("10.77.7.12", &h, "it belongs to job 811 step 0"),
            "refused a hello from 10.77.7.12 (claims RANK 1 of 4 on node02, pid 77): it belongs "
            "to job 811 step 0");
  EXPECT_EQ(describe_refusal("10.0.0.9", nullptr, "not a ddp-check/2 hello: \"\x1b[2J\""),
            "refused a connection from 10.0.0.9: not a ddp-check/2 hello: \"\\x1b[2J\"");
}

TEST(Admit, BindingComesFromSlurmsVariables) {
  std::map<std::string, std::string, std::less<>> env = {
      {"SLURM_JOB_ID", "901"}, {"SLURM_STEP_ID", "0"}, {"SLURM_HET_JOB_COMPONENT", "1"}};
  auto lookup = [&env](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  StepBinding b = read_binding(lookup);
  EXPECT_EQ(b.job, "901");
  EXPECT_EQ(b.step, "0");
  EXPECT_EQ(b.het, "1");
  env["SLURM_HET_JOB_ID"] = "900";  // a heterogeneous job: its leader's id binds the step
  EXPECT_EQ(read_binding(lookup).job, "900");
  env.clear();
  b = read_binding(lookup);
  EXPECT_EQ(b.job, "-");
  EXPECT_EQ(b.step, "-");
}

TEST(Admit, MungeSocketFromSlurmConf) {
  EXPECT_EQ(munge_socket_from_slurm_conf("AuthType=auth/munge\n"
                                         "AuthInfo=socket=/tmp/ddp-cluster-7/munge/munge.socket.2,"
                                         "cred_expire=10\n"),
            "/tmp/ddp-cluster-7/munge/munge.socket.2");
  EXPECT_EQ(munge_socket_from_slurm_conf("authinfo = cred_expire=10, Socket=/run/m.sock # site\n"),
            "/run/m.sock");
  EXPECT_EQ(munge_socket_from_slurm_conf("#AuthInfo=socket=/old\nAuthType=auth/munge\n"),
            std::nullopt);
  EXPECT_EQ(munge_socket_from_slurm_conf("AuthInfo=socket=/a\nAuthInfo=socket=/b\n"), "/b");
}

TEST(PeerText, NothingAPeerSendsReadsAsAVerdict) {
  EXPECT_EQ(peer_text("ddp-check: suspect node02: slow: x"),
            "ddp-check\\x3a suspect node02: slow: x");
  EXPECT_EQ(peer_text("junk DDP-CHECK: suspect node02: slow ddp-check:ddp-check:"),
            "junk DDP-CHECK\\x3a suspect node02: slow ddp-check\\x3addp-check\\x3a");
  EXPECT_EQ(peer_text("line\nddp-check: suspect n: slow: x"),
            "line\\x0addp-check\\x3a suspect n: slow: x");
  EXPECT_EQ(peer_text("ddp-check"), "ddp-check");
  EXPECT_EQ(peer_text(""), "");
  // A refusal quotes nothing a peer sent in a form ddp-watch accepts.
  const std::string line =
      "ddp-check: REFUSED: " +
      describe_refusal("10.0.0.9", nullptr,
                       "hello: unknown line ddp-check: suspect node02: slow: x");
  EXPECT_EQ(line.find("ddp-check: suspect"), std::string::npos);
  EXPECT_NE(line.find("ddp-check\\x3a suspect node02"), std::string::npos);
}

}  // namespace
}  // namespace ddp::check
