// ddpgen's core without the command line: durations, shell quoting, strict YAML decoding with
// located errors, and the profile's port range (the plugin's strict parser).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gen/core/duration.hpp"
#include "gen/core/job.hpp"
#include "gen/core/plan.hpp"
#include "gen/core/profile.hpp"
#include "gen/core/shell.hpp"
#include "libddp/util/shell.hpp"

namespace ddpgen {
namespace {

TEST(GenDuration, ParsesSlurmFormats) {
  EXPECT_EQ(duration::parse("30"), 30 * 60);
  EXPECT_EQ(duration::parse("01:30"), 90);
  EXPECT_EQ(duration::parse("02:00:00"), 2 * 3600);
  EXPECT_EQ(duration::parse("1-00"), 24 * 3600);
  EXPECT_EQ(duration::parse("1-02:03:04"), 24 * 3600 + 2 * 3600 + 3 * 60 + 4);
  for (const char* bad : {"", "0", "abc", "1:2:3:4", "-5", "1-", "00:00:00"})
    EXPECT_FALSE(duration::parse(bad)) << bad;
  EXPECT_EQ(duration::format(3661), "01:01:01");
  EXPECT_EQ(duration::format(90061), "1-01:01:01");
}

TEST(GenShell, QuotesToOneWord) {
  // Without a run-time reference a word is the one quoter's (libddp/util/shell.hpp).
  for (const char* text : {"train.py", "a b", "it's", "$HOME", "${X:-y;z}", ""})
    EXPECT_EQ(shell::quote_expanding(text), ddp::shell::quote(text)) << text;
  EXPECT_EQ(shell::quote_expanding("it's"), "'it'\\''s'");
  EXPECT_TRUE(shell::sbatch_value_problem("a\nb"));
  EXPECT_FALSE(shell::sbatch_value_problem("gpu"));
}

TEST(GenYaml, UnknownKeyHasLocationAndSuggestion) {
  auto job = decode_job("time: \"01:00:00\"\nscript: train.py\nnodez: 2\n", "job.yaml", {});
  ASSERT_FALSE(job);
  EXPECT_EQ(job.error().to_string(),
            "job.yaml:3:1: unknown key \"nodez\" (did you mean \"nodes\"?)");
}

TEST(GenYaml, DuplicateKeyAndWrongTypeAreLocated) {
  auto dup = decode_job("time: \"01:00:00\"\nscript: a.py\nscript: b.py\n", "j.yaml", {});
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().where.file, "j.yaml");
  EXPECT_EQ(dup.error().where.line, 3);
  EXPECT_NE(dup.error().message.find("duplicate key \"script\""), std::string::npos);
  auto nodes = decode_job("time: \"01:00:00\"\nscript: a.py\nnodes: two\n", "j.yaml", {});
  ASSERT_FALSE(nodes);
  EXPECT_EQ(nodes.error().where.line, 3);
  EXPECT_EQ(nodes.error().where.column, 8);
  EXPECT_NE(nodes.error().message.find("must be an integer"), std::string::npos);
}

TEST(GenYaml, SetOverrideIsNamedInsteadOfAPosition) {
  auto job = decode_job("time: \"01:00:00\"\nscript: a.py\n", "j.yaml", {"nodes=x"});
  ASSERT_FALSE(job);
  EXPECT_EQ(job.error().where.file, "--set nodes=x");
  EXPECT_EQ(job.error().where.line, 0);
}

// preflight: a boolean, or a mapping that turns it on; --set can reach into it.
TEST(GenYaml, PreflightIsABooleanOrAMapping) {
  const std::string head = "time: \"01:00:00\"\nscript: a.py\n";
  struct Case {
    std::string yaml;
    std::vector<std::string> sets;
    bool on;
    long timeout;
    bool pairs;
    std::optional<double> threshold;
  };
  const Case cases[] = {
      {"", {}, false, 60, false, {}},
      {"preflight: false\n", {}, false, 60, false, {}},
      {"preflight: true\n", {}, true, 60, false, {}},
      {"preflight: {}\n", {}, true, 60, false, {}},
      {"preflight: {timeout: 90s}\n", {}, true, 90, false, {}},
      {"preflight: {pairs: true, pairs_threshold: .25}\n", {}, true, 60, true, 0.25},
      {"preflight: true\n", {"preflight.pairs=true"}, true, 60, true, {}},
      {"",
       {"preflight.timeout=1h", "preflight.pairs=true", "preflight.pairs_threshold=0.3"},
       true,
       3600,
       true,
       0.3},
  };
  for (const Case& c : cases) {
    auto job = decode_job(head + c.yaml, "j.yaml", c.sets);
    ASSERT_TRUE(job) << c.yaml << job.error().to_string();
    ASSERT_EQ(job->preflight.has_value(), c.on) << c.yaml;
    if (!c.on) continue;
    EXPECT_EQ(job->preflight->timeout, c.timeout) << c.yaml;
    EXPECT_EQ(job->preflight->pairs, c.pairs) << c.yaml;
    EXPECT_EQ(job->preflight->pairs_threshold, c.threshold) << c.yaml;
  }
  const std::pair<std::string, std::string> bad[] = {
      {"preflight: 1\n", "\"preflight\" must be true, false or a mapping"},
      {"preflight: [pairs]\n", "\"preflight\" must be true, false or a mapping"},
      {"preflight: {pairs: yes}\n", "\"preflight.pairs\" must be true or false"},
      {"preflight: {pairs: true, pairs_threshold: 1}\n", "greater than 0 and less than 1"},
      {"preflight: {pairs: true, pairs_threshold: 0}\n", "greater than 0 and less than 1"},
      {"preflight: {pairs: true, pairs_threshold: -0.5}\n", "greater than 0 and less than 1"},
      {"preflight: {pairs: true, pairs_threshold: \"0.5; rm\"}\n", "less than 1"},
      {"preflight: {pairs_threshold: 0.5}\n", "needs \"preflight.pairs: true\""},
      {"preflight: {timeout: 0}\n", "\"preflight.timeout\""},
      {"preflight: {timeout: 3601}\n", "must be from 1s to 1h"},
      {"preflight: {pair: true}\n", "(did you mean \"preflight.pairs\"?)"},
  };
  for (const auto& [yaml, message] : bad) {
    auto job = decode_job(head + yaml, "j.yaml", {});
    ASSERT_FALSE(job) << yaml;
    EXPECT_EQ(job.error().where.line, 3) << yaml;
    EXPECT_NE(job.error().message.find(message), std::string::npos) << job.error().message;
  }
}

Result<Profile> profile_with_ports(const std::string& ports) {
  const std::string text =
      "partitions:\n  - name: gpu\n    max_nodes: 4\n    max_time: \"1-00:00:00\"\n"
      "port_range: \"" +
      ports + "\"\n";
  auto doc = read_profile_doc(text, "p.yaml");
  if (!doc) return std::unexpected(doc.error());
  return decode_profile(*doc, Profile{});
}

TEST(GenProfile, PortRangeIsTheStrictOne) {
  auto ok = profile_with_ports("21000-21999");
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(ok->port_first, 21000);
  EXPECT_EQ(ok->port_last, 21999);
  for (const char* bad : {"20000x-30999", "80-90", "30999-20000", "20000"}) {
    auto r = profile_with_ports(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().where.line, 5) << bad;
    EXPECT_NE(r.error().message.find("\"port_range\" must be LOW-HIGH"), std::string::npos);
  }
}

// Site variable values: $NAME, ${NAME} and ${NAME:+TEXT} expand; inside TEXT only plain
// characters and references, because a quote there ends bash's double-quoted word.
TEST(GenShell, SiteValuesExpandOnlyWhatIsSafe) {
  struct Case {
    const char* value;
    const char* quoted;  // nullptr: refused
  };
  const Case cases[] = {
      {"/opt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}",
       "\"/opt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\""},
      {"/tmp/${USER}-$SLURM_JOB_ID", "\"/tmp/${USER}-$SLURM_JOB_ID\""},
      {"a$1 `x` \"q\" \\ $", "\"a\\$1 \\`x\\` \\\"q\\\" \\\\ \\$\""},
      {"it's", "\"it's\""},
      {"${X:+'}", nullptr},
      {"${X:+a$(id)}", nullptr},
      {"${X:+${Y:+z}}", nullptr},
      {"${X:-default}", nullptr},
      {"${X:+unclosed", nullptr},
      {"${X:+a b/c${Y}}", "\"${X:+a b/c${Y}}\""},
  };
  for (const auto& c : cases) {
    const auto problem = shell::site_value_problem(c.value);
    if (!c.quoted) {
      EXPECT_TRUE(problem) << c.value;
      continue;
    }
    EXPECT_FALSE(problem) << c.value << ": " << *problem;
    EXPECT_EQ(shell::quote_allowing_vars(c.value), c.quoted) << c.value;
  }
}

// What later stages need is a typed field: the launcher, --cpus-per-task, the requeue policy.
TEST(GenPlan, CarriesTypedFields) {
  auto profile = decode_profile(*read_profile_doc("node: {gpus: 4, cores: 32}\ncpus_per_gpu: 8\n"
                                                  "partitions: [{name: gpu}]\n",
                                                  "p.yaml"),
                                Profile{});
  ASSERT_TRUE(profile) << profile.error().to_string();
  auto job = decode_job(
      "time: \"02:00:00\"\nscript: t.py\nlauncher: srun\ncheckpoint: {dir: ck, requeue: true, "
      "signal_time: 300, max_restarts: 3, requeue_on_failure: true}\n",
      "job.yaml", {});
  ASSERT_TRUE(job) << job.error().to_string();
  auto p = plan(*job, *profile);
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->launcher, Launcher::srun);
  EXPECT_EQ(p->cpus_per_task, 8);  // 8 x 4 GPUs over 4 tasks
  ASSERT_TRUE(p->requeue);
  EXPECT_EQ(p->requeue->signal, "USR1");
  EXPECT_EQ(p->requeue->signal_time, 300);
  EXPECT_EQ(p->requeue->grace, 290);
  EXPECT_EQ(p->requeue->max_restarts, 3);
  EXPECT_TRUE(p->requeue->on_failure);
}

// A respawn never returns to a node named before, so respawns beyond the spares cannot happen:
// a warning, not an error.
TEST(GenPlan, WarnsOfRespawnsBeyondTheSpares) {
  auto profile = decode_profile(*read_profile_doc("node: {gpus: 0, cores: 8}\n"
                                                  "partitions: [{name: cpu}]\n",
                                                  "p.yaml"),
                                Profile{});
  ASSERT_TRUE(profile) << profile.error().to_string();
  const std::pair<int, std::size_t> cases[] = {{1, 0}, {2, 0}, {3, 1}};
  for (const auto& [respawns, warnings] : cases) {
    auto job = decode_job(
        "time: \"01:00:00\"\nscript: t.py\nnodes: 2\nspares: 2\n"
        "watchdog: {timeout: 5m}\nheal: {max_respawns: " +
            std::to_string(respawns) + "}\n",
        "job.yaml", {});
    ASSERT_TRUE(job) << job.error().to_string();
    auto p = plan(*job, *profile);
    ASSERT_TRUE(p) << p.error().to_string();
    ASSERT_EQ(p->warnings.size(), warnings) << respawns;
    if (warnings > 0) {
      EXPECT_EQ(p->warnings.front().to_string(),
                "job.yaml:6:7: \"heal.max_respawns\" 3 > \"spares\" 2: each respawn replaces a "
                "named node by a spare for good, so at most 2 respawns can happen; then the heal "
                "path excludes and requeues");
    }
  }
}

// A leading "~" is the home directory in the paths ddpgen creates; elsewhere it stays as
// written, and a warning says so.
TEST(GenPlan, LeadingTildeIsHomeInPathsAndWarnedElsewhere) {
  auto profile = decode_profile(*read_profile_doc("node: {gpus: 1, cores: 8}\n"
                                                  "partitions: [{name: gpu}]\n",
                                                  "p.yaml"),
                                Profile{});
  ASSERT_TRUE(profile) << profile.error().to_string();
  auto job = decode_job(
      "time: \"10\"\nscript: t.py\nlauncher: srun\ncheckpoint: {dir: ~/ck}\n"
      "logs: {dir: ~/logs}\nargs: [--data, ~/data]\nenv: {DATA: ~/data, HOME_OK: \"a~b\"}\n",
      "job.yaml", {});
  ASSERT_TRUE(job) << job.error().to_string();
  auto p = plan(*job, *profile);
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->checkpoint_dir, "${HOME}/ck");
  EXPECT_EQ(p->logs_dir, "${HOME}/logs");
  std::vector<std::string> warned;
  for (const auto& w : p->warnings)
    if (w.message.find("leading \"~\"") != std::string::npos)
      warned.push_back(w.message.substr(0, w.message.find(':')));
  EXPECT_EQ(warned, (std::vector<std::string>{"\"args[1]\"", "\"env.DATA\""}));
}

// "$MASTER_ADDR" without braces stays as written. In a shell prefix that is what is meant: the
// prefix runs in each task, after the setup, and its shell reads the variable there (no
// warning). Elsewhere the warning says where the variable is set instead of calling it unknown.
TEST(GenPlan, TaskVariablesAreForAShellPrefix) {
  auto profile = decode_profile(*read_profile_doc("node: {gpus: 1, cores: 8}\n"
                                                  "partitions: [{name: gpu}]\n",
                                                  "p.yaml"),
                                Profile{});
  ASSERT_TRUE(profile) << profile.error().to_string();
  auto job = decode_job(
      "time: \"10\"\nscript: t.py\nlauncher: srun\n"
      "task_prefix: [bash, -c, 'exec \"$@\" --addr=\"$MASTER_ADDR\"', with-addr]\n"
      "args: [--rank, $RANK, --ver, $VER]\n",
      "job.yaml", {});
  ASSERT_TRUE(job) << job.error().to_string();
  auto p = plan(*job, *profile);
  ASSERT_TRUE(p) << p.error().to_string();
  std::vector<std::string> warned;
  for (const auto& w : p->warnings) warned.push_back(w.message);
  EXPECT_EQ(warned,
            (std::vector<std::string>{
                "\"args[1]\": $RANK stays as written: RANK is set in each task only, never where "
                "ddpgen's values expand; a shell in task_prefix reads it there ([bash, -c, "
                "'exec \"$@\" --arg=\"$RANK\"', prefix])",
                "\"args[3]\": $VER stays as written: the job knows no variable VER (a job's own "
                "go in env:, a site's in its profile's variables:)"}));
  // A prefix that is no shell gets the text: the warning stays.
  auto direct = decode_job(
      "time: \"10\"\nscript: t.py\nlauncher: srun\n"
      "task_prefix: [numactl, --cpunodebind=$LOCAL_RANK]\n",
      "job.yaml", {});
  ASSERT_TRUE(direct) << direct.error().to_string();
  auto q = plan(*direct, *profile);
  ASSERT_TRUE(q) << q.error().to_string();
  ASSERT_EQ(q->warnings.size(), 1U);
  EXPECT_EQ(q->warnings.front().message.substr(0, 59),
            "\"task_prefix[1]\": $LOCAL_RANK stays as written: LOCAL_RANK ");
}

// accelerate: task_prefix wraps accelerate launch inside the wrapper (its count, then its words,
// first among the wrapper's arguments), never the wrapper itself; a config file is checked in
// the batch shell only when the job has two processes or more.
TEST(GenPlan, AcceleratePrefixWrapsTheLauncher) {
  auto profile = decode_profile(*read_profile_doc("node: {gpus: 0, cores: 8}\n"
                                                  "partitions: [{name: cpu}]\n",
                                                  "p.yaml"),
                                Profile{});
  ASSERT_TRUE(profile) << profile.error().to_string();
  auto job = decode_job(
      "time: \"10\"\nscript: t.py\nnodes: 2\nlauncher: accelerate\n"
      "task_prefix: [bash, -c, \"exec $*\", wrapper]\naccelerate: {config_file: a.yaml}\n",
      "job.yaml", {});
  ASSERT_TRUE(job) << job.error().to_string();
  auto p = plan(*job, *profile);
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_TRUE(p->prefix_words.empty());
  EXPECT_TRUE(p->accelerate_prefix);
  EXPECT_TRUE(p->named_launcher);  // ddp-watch is told: accelerate is behind the prefix
  std::vector<std::string> args;
  for (const auto& w : p->wrapper_args) args.push_back(w.raw + w.user.value_or(""));
  EXPECT_EQ(args, (std::vector<std::string>{"4", "bash", "-c", "exec $*", "wrapper",
                                            "--config_file=a.yaml"}));
  EXPECT_EQ(p->wrapper_exec.rfind("ddpgen_prefix=$1; shift; ACCELERATE_USE_CPU=true exec "
                                  "\"${@:1:ddpgen_prefix}\" accelerate launch ",
                                  0),
            0u)
      << p->wrapper_exec;
  EXPECT_TRUE(p->wrapper_exec.ends_with("\"${@:ddpgen_prefix+1}\"")) << p->wrapper_exec;
  EXPECT_EQ(p->accelerate_config_check, "a.yaml");
  auto single = decode_job(
      "time: \"10\"\nscript: t.py\nlauncher: accelerate\naccelerate: {config_file: a.yaml}\n",
      "job.yaml", {});
  ASSERT_TRUE(single) << single.error().to_string();
  auto one = plan(*single, *profile);
  ASSERT_TRUE(one) << one.error().to_string();
  EXPECT_TRUE(one->accelerate_config_check.empty());  // one process: nothing to take rank 0 twice
  EXPECT_FALSE(one->accelerate_prefix);
}

TEST(GenProfile, GresTypeIsAPlainName) {
  auto r = decode_profile(*read_profile_doc("node: {gpus: 1, gpu_type: \"v100\\n#SBATCH -p x\"}\n"
                                            "partitions: [{name: gpu}]\n",
                                            "p.yaml"),
                          Profile{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().where.line, 1);
  EXPECT_NE(r.error().message.find("is not a GRES type name"), std::string::npos);
}

}  // namespace
}  // namespace ddpgen
