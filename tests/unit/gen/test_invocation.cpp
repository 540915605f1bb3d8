// Every ddp-check and ddp-watch command line in the scripts ddpgen renders, parsed with the
// tools' own option tables: for each golden and corpus case, the expected script and the script
// the core renders now. A flag ddpgen writes that a tool does not read, or a value that reads
// back differently from the Plan's, fails here in seconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "ddp-check/options.hpp"
#include "ddp-watch/options.hpp"
#include "ddp-watch/respawn.hpp"
#include "gen/app/profile_store.hpp"
#include "gen/core/invocation.hpp"
#include "gen/core/job.hpp"
#include "gen/core/render.hpp"

namespace fs = std::filesystem;
using namespace ddpgen;

namespace {

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A number where a shell default or arithmetic supplies one: "${DDP_CHECK_TIMEOUT:-60}" is 60
// and "$((60 + 30))" is 90 (the variable unset, as in the tests); other references, such as
// ${SLURM_JOB_ID} in a file name, stay as written.
std::string expand(std::string word) {
  static const std::regex fallback(R"(\$\{[A-Z_]+:-([0-9]+)\})");
  static const std::regex sum(R"(\$\(\(([0-9]+) \+ ([0-9]+)\)\))");
  word = std::regex_replace(word, fallback, "$1");
  std::smatch m;
  while (std::regex_search(word, m, sum)) {
    const long total = std::stol(m[1].str()) + std::stol(m[2].str());
    word = m.prefix().str() + std::to_string(total) + m.suffix().str();
  }
  return word;
}

// The words of one line as bash splits them, quotes removed, then expand()ed.
std::vector<std::string> shell_words(std::string_view line) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote == '\'' && c != '\'') {
      word += c;
    } else if (quote == '"' && c == '\\' && i + 1 < line.size()) {
      word += line[++i];
    } else if (quote && c == quote) {
      quote = 0;
    } else if (quote) {
      word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) out.push_back(expand(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) out.push_back(expand(word));
  return out;
}

// The options of every line of `script` that runs `program`, up to `end` ("||", "--").
std::vector<std::vector<std::string>> command_lines(const std::string& script,
                                                    std::string_view program,
                                                    std::string_view end) {
  std::vector<std::vector<std::string>> out;
  std::istringstream lines(script);
  for (std::string line; std::getline(lines, line);) {
    auto words = shell_words(line);
    if (words.empty() || words.front() != program) continue;
    std::vector<std::string> options;
    for (std::size_t i = 1; i < words.size() && words[i] != end; ++i) options.push_back(words[i]);
    out.push_back(std::move(options));
  }
  return out;
}

// The command after "--" of every line of `script` that runs `program`, its continuation lines
// (a backslash at the end) joined: the step that ddp-watch runs.
std::vector<std::vector<std::string>> commands_after(const std::string& script,
                                                     std::string_view program) {
  std::vector<std::vector<std::string>> out;
  std::istringstream lines(script);
  for (std::string line; std::getline(lines, line);) {
    auto words = shell_words(line);
    if (words.empty() || words.front() != program) continue;
    std::string joined = line;
    while (joined.ends_with("\\") && std::getline(lines, line)) {
      joined.pop_back();
      joined += line;
    }
    words = shell_words(joined);
    const auto dashes = std::find(words.begin(), words.end(), "--");
    if (dashes == words.end()) continue;
    out.emplace_back(dashes + 1, words.end());
  }
  return out;
}

ddp::check::Options check_options(const CheckInvocation& c) {
  ddp::check::Options o;
  o.timeout_s = static_cast<double>(c.timeout.value + c.timeout.plus);
  if (!c.fabric.empty()) o.fabric = c.fabric;
  o.pairs = c.pairs;
  if (c.pairs_threshold) o.pairs_threshold = *c.pairs_threshold;
  return o;
}

ddp::watch::Options watch_options(const WatchInvocation& w) {
  ddp::watch::Options o;
  o.timeout_s = w.timeout.value + w.timeout.plus;
  o.startup_s = w.startup.value_or(o.timeout_s);  // ddp-watch's default: the timeout
  if (w.grace) o.grace_s = *w.grace;
  o.stacks = w.stacks.value_or("");
  o.heartbeat = w.heartbeat.value_or("");
  o.heal = w.heal.value_or("");
  if (w.heal_max) o.heal_max = *w.heal_max;
  o.heal_exclude = !w.heal_no_exclude;
  o.heal_defer = w.heal_defer;
  o.launchers = w.launchers;
  if (w.spares) o.spares = *w.spares;
  if (w.respawn_max) o.respawn_max = *w.respawn_max;
  o.first_check = w.first_check;
  if (w.check_tasks_per_node) o.check_tasks_per_node = *w.check_tasks_per_node;
  if (w.check_wrapper) o.check_wrapper = *w.check_wrapper;
  return o;
}

void expect_check(const std::vector<std::string>& args, const CheckInvocation& c) {
  const std::vector<std::string_view> views(args.begin(), args.end());
  const auto no_env = [](std::string_view) { return std::optional<std::string>{}; };
  auto parsed = ddp::check::parse_options(views, no_env);
  ASSERT_TRUE(parsed) << parsed.error().message;
  const auto want = check_options(c);
  EXPECT_EQ(parsed->timeout_s, want.timeout_s);
  EXPECT_EQ(parsed->fabric, want.fabric);
  EXPECT_EQ(parsed->pairs, want.pairs);
  EXPECT_EQ(parsed->pairs_threshold, want.pairs_threshold);
  EXPECT_TRUE(*parsed == want) << "ddp-check reads an option the invocation does not say";
}

// `args`: ddp-watch's options; `command`: the step it runs, as the script has it.
void expect_watch(std::vector<std::string> args, const std::vector<std::string>& command,
                  const WatchInvocation& w) {
  args.push_back("--");
  args.insert(args.end(), command.begin(), command.end());
  auto parsed = ddp::watch::parse_options(args);
  ASSERT_TRUE(parsed) << parsed.error().message;
  auto want = watch_options(w);
  want.command = command;
  EXPECT_EQ(parsed->check_wrapper, want.check_wrapper);
  EXPECT_EQ(parsed->timeout_s, want.timeout_s);
  EXPECT_EQ(parsed->startup_s, want.startup_s);
  EXPECT_EQ(parsed->grace_s, want.grace_s);
  EXPECT_EQ(parsed->stacks, want.stacks);
  EXPECT_EQ(parsed->heartbeat, want.heartbeat);
  EXPECT_EQ(parsed->heal, want.heal);
  EXPECT_EQ(parsed->heal_max, want.heal_max);
  EXPECT_EQ(parsed->heal_exclude, want.heal_exclude);
  EXPECT_EQ(parsed->launchers, want.launchers);
  EXPECT_EQ(parsed->spares, want.spares);
  EXPECT_EQ(parsed->respawn_max, want.respawn_max);
  EXPECT_EQ(parsed->first_check, want.first_check);
  EXPECT_EQ(parsed->check_tasks_per_node, want.check_tasks_per_node);
  // --respawn-check: ddp-check's words, read back with ddp-check's own table.
  ASSERT_EQ(parsed->respawn_check.empty(), !w.respawn_check);
  if (w.respawn_check) {
    EXPECT_EQ(parsed->respawn_check.front(), "ddp-check");
    const std::vector<std::string> check(parsed->respawn_check.begin() + 1,
                                         parsed->respawn_check.end());
    expect_check(check, *w.respawn_check);
    want.respawn_check = parsed->respawn_check;
  }
  EXPECT_TRUE(*parsed == want) << "ddp-watch reads an option the invocation does not say";
}

// The tools' command lines in `script` against the invocations of `plan`, in script order.
void expect_script(const std::string& script, const Plan& plan) {
  std::vector<WatchInvocation> watches;
  if (auto w = preflight_watch(plan)) watches.push_back(*w);
  if (auto w = training_watch(plan)) watches.push_back(*w);
  // The preflight's own step, unless the training's ddp-watch checks every node itself.
  const auto check = preflight_step(plan) ? preflight_check(plan) : std::nullopt;
  const auto check_lines = command_lines(script, "ddp-check", "||");
  // ddp-watch around a step, and ddp-watch --heal-requeue RECORD (the requeue --heal-defer kept
  // for after the post: lines), each parsed with ddp-watch's own table.
  std::vector<std::vector<std::string>> watch_lines;
  std::vector<std::vector<std::string>> requeue_lines;
  const auto steps = commands_after(script, "ddp-watch");
  for (auto& words : command_lines(script, "ddp-watch", "--")) {
    if (words.empty() || !words.front().starts_with("--heal-requeue")) {
      watch_lines.push_back(std::move(words));
      continue;
    }
    words.erase(std::find(words.begin(), words.end(), "||"), words.end());
    requeue_lines.push_back(std::move(words));
  }
  ASSERT_EQ(check_lines.size(), check ? 1u : 0u);
  if (check) expect_check(check_lines.front(), *check);
  ASSERT_EQ(watch_lines.size(), watches.size());
  ASSERT_EQ(steps.size(), watches.size());
  for (std::size_t i = 0; i < watches.size(); ++i)
    expect_watch(watch_lines[i], steps[i], watches[i]);

  const bool deferred = std::any_of(watches.begin(), watches.end(),
                                    [](const WatchInvocation& w) { return w.heal_defer; });
  EXPECT_EQ(!requeue_lines.empty(), deferred) << "--heal-requeue without --heal-defer, or not";
  for (const auto& words : requeue_lines) {
    auto parsed = ddp::watch::parse_options(words);
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(parsed->heal_requeue, *training_watch(plan)->heal);
  }
}

// Every case directory with an expected script, a job file and a profile.
std::vector<fs::path> cases() {
  std::vector<fs::path> out;
  for (const char* suite : {"tests/golden", "tests/corpus"}) {
    for (const auto& entry : fs::directory_iterator(fs::path(DDP_SOURCE_DIR) / suite)) {
      const fs::path& dir = entry.path();
      if (fs::exists(dir / "expected.sbatch") && fs::exists(dir / "job.yaml") &&
          fs::exists(dir / "profile"))
        out.push_back(dir);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The Plan of a case, read as tests/golden/check.sh has ddpgen read it (from the case's
// directory, the source tree's profiles only).
Result<Plan> case_plan(const fs::path& dir) {
  std::string profile_name = read(dir / "profile");
  while (!profile_name.empty() && std::isspace(static_cast<unsigned char>(profile_name.back())))
    profile_name.pop_back();
  auto profile = app::load_profile(profile_name, {std::string(DDP_SOURCE_DIR) + "/site-profiles"});
  if (!profile) return std::unexpected(profile.error());
  auto job = decode_job(read(dir / "job.yaml"), "job.yaml", {});
  if (!job) return std::unexpected(job.error());
  return plan(*job, *profile);
}

Result<std::string> render_case(const Plan& p) {
  const fs::path templates = fs::path(DDP_SOURCE_DIR) / "templates";
  return render(p,
                {"test", "job.yaml", "sbatch.sh.mustache", read(templates / "sbatch.sh.mustache"),
                 "task-setup.sh", read(templates / "task-setup.sh")});
}

// --check-wrapper: the check of a respawn's nodes, and of every node before the first step, is
// the preflight step that the script would have without spares (its heal: ddp-watch around
// it): the same per-task setup words before ddp-check, the same tasks per node. The training
// step's ddp-watch line in `script` is read with ddp-watch's own table.
void expect_check_as_preflight(const std::string& script, const Plan& plan) {
  const auto watch = training_watch(plan);
  if (!watch || !watch->check_wrapper) return;
  auto args = command_lines(script, "ddp-watch", "--").back();
  const auto step = commands_after(script, "ddp-watch").back();
  args.push_back("--");
  args.insert(args.end(), step.begin(), step.end());
  auto parsed = ddp::watch::parse_options(args);
  ASSERT_TRUE(parsed) << parsed.error().message;
  const auto check = ddp::watch::check_command(*parsed, {"n1", "n2"});

  Plan alone = plan;
  alone.spares = 0;
  ASSERT_TRUE(preflight_step(alone) && preflight_watch(alone));
  auto rendered = render_case(alone);
  ASSERT_TRUE(rendered) << rendered.error().to_string();
  const auto preflight = commands_after(*rendered, "ddp-watch").front();
  const auto program =
      preflight.begin() + static_cast<long>(ddp::watch::srun_program_at(preflight));
  const auto dc = std::find(program, preflight.end(), "ddp-check");
  ASSERT_NE(dc, preflight.end());
  const std::vector<std::string> wrapper(program, dc);
  // The check: srun, its 5 layout options, the setup's words, ddp-check.
  const auto in_check = std::find(check.begin(), check.end(), "ddp-check");
  ASSERT_GE(in_check - check.begin(), 6);
  EXPECT_EQ(std::vector<std::string>(check.begin() + 6, in_check), wrapper);
  const std::string per_node =
      "--ntasks-per-node=" +
      std::to_string(parsed->check_tasks_per_node > 0 ? parsed->check_tasks_per_node : 1);
  EXPECT_NE(std::find(check.begin(), check.end(), per_node), check.end());
  EXPECT_NE(std::find(preflight.begin(), program, per_node), program);
}

}  // namespace

TEST(Invocation, GoldenScriptsParseWithTheToolsTables) {
  const fs::path here = fs::current_path();
  const auto all = cases();
  ASSERT_GT(all.size(), 40u);
  std::size_t checks = 0;
  std::size_t watches = 0;
  for (const fs::path& dir : all) {
    SCOPED_TRACE(dir.string());
    fs::current_path(dir);
    auto p = case_plan(dir);
    fs::current_path(here);
    ASSERT_TRUE(p) << p.error().to_string();
    const std::string expected = read(dir / "expected.sbatch");
    expect_script(expected, *p);
    auto rendered = render_case(*p);
    ASSERT_TRUE(rendered) << rendered.error().to_string();
    expect_script(*rendered, *p);
    expect_check_as_preflight(expected, *p);
    checks += command_lines(expected, "ddp-check", "||").size();
    watches += command_lines(expected, "ddp-watch", "--").size();
  }
  // The cases cover both tools, and the preflight's ddp-watch --heal too.
  EXPECT_GE(checks, 4u);
  EXPECT_GE(watches, 4u);
}

TEST(Invocation, TheTimeoutVariableIsDdpChecksOwn) {
  Plan p;
  p.preflight = Preflight{};
  const auto check = preflight_check(p);
  ASSERT_TRUE(check);
  std::string_view env;
  for (const auto& row : ddp::check::option_table()) {
    if (row.spec.name == "--timeout") env = row.spec.env;
  }
  EXPECT_EQ(check->timeout.env, env);
}

TEST(Invocation, Words) {
  CheckInvocation c{.timeout = {.value = 60, .env = "DDP_CHECK_TIMEOUT", .plus = 0},
                    .fabric = "ib",
                    .pairs = true,
                    .pairs_threshold = 0.25};
  EXPECT_EQ(words(c),
            (std::vector<std::string>{"--timeout=\"${DDP_CHECK_TIMEOUT:-60}\"", "--fabric=ib",
                                      "--pairs", "--pairs-threshold=0.25"}));
  WatchInvocation w;
  w.timeout = {.value = 60, .env = "DDP_CHECK_TIMEOUT", .plus = 30};
  w.heal = "$SLURM_SUBMIT_DIR/.ddp-heal.${SLURM_JOB_ID}";
  w.heal_max = 2;
  w.heal_no_exclude = true;
  EXPECT_EQ(words(w),
            (std::vector<std::string>{"--timeout=\"$((${DDP_CHECK_TIMEOUT:-60} + 30))\"",
                                      "--heal=\"$SLURM_SUBMIT_DIR/.ddp-heal.${SLURM_JOB_ID}\"",
                                      "--heal-max=2", "--heal-no-exclude"}));
}

namespace {

// The Plan of a job file's text on a profile of the source tree.
Result<Plan> plan_of(const std::string& yaml, const std::string& profile_name) {
  auto profile = app::load_profile(profile_name, {std::string(DDP_SOURCE_DIR) + "/site-profiles"});
  if (!profile) return std::unexpected(profile.error());
  auto job = decode_job(yaml, "job.yaml", {});
  if (!job) return std::unexpected(job.error());
  return plan(*job, *profile);
}

}  // namespace

TEST(Invocation, WithoutThePluginTheCheckRunsUnderTheSetupWhereItComesFirst) {
  const std::string base =
      "name: t\nspares: 1\ntime: \"01:00:00\"\nscript: train.py\ncheckpoint: {dir: ckpt}\n"
      "preflight: true\nwatchdog: {timeout: 10m}\nheal: {max_requeues: 2}\n";
  // 3 nodes and a spare; the local profile's partition holds 3 nodes in all.
  const std::string roihu = "nodes: 3\naccount: project_2001234\n";
  struct Case {
    std::string extra;
    std::string profile;
    std::optional<long> wrapper;         // --check-wrapper; nullopt: none
    bool checked;                        // --respawn-check and --first-check at all
    std::optional<long> tasks_per_node;  // --check-tasks-per-node
  };
  const Case cases[] = {
      // roihu has no plugin: bash -c CODE ddpgen-task MODE N FIRST SIZE, the preflight's.
      {"launcher: srun\n", "roihu", 8, true, 4},
      {"launcher: torchrun\n", "roihu", 8, true, std::nullopt},
      // A launcher's workers' logs are inside the command, after the setup.
      {"launcher: torchrun\nlogs: {dir: logs}\n", "roihu", 8, true, std::nullopt},
      // Their own code after the setup: the preflight stays a step, a respawn is not checked.
      {"launcher: accelerate\n", "roihu", std::nullopt, false, std::nullopt},
      {"launcher: lightning\n", "roihu", std::nullopt, false, std::nullopt},
      // One task per process with logs: the per-rank tee comes first in the program.
      {"launcher: srun\nlogs: {dir: logs}\n", "roihu", std::nullopt, false, std::nullopt},
      // A container runtime that wraps the command comes first too.
      {"launcher: srun\ncontainer: {runtime: apptainer, image: torch.sif}\n", "roihu", std::nullopt,
       false, std::nullopt},
      // Under the plugin, srun --ddp sets up the check.
      {"launcher: srun\nnodes: 2\nprocs_per_node: 2\n", "local", std::nullopt, true, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.profile + ": " + c.extra);
    auto p = plan_of(base + (c.profile == "roihu" ? roihu : "") + c.extra, c.profile);
    ASSERT_TRUE(p) << p.error().to_string();
    const auto w = training_watch(*p);
    ASSERT_TRUE(w);
    EXPECT_EQ(w->check_wrapper, c.wrapper);
    EXPECT_EQ(w->respawn_check.has_value(), c.checked);
    EXPECT_EQ(w->first_check, c.checked);
    EXPECT_EQ(w->check_tasks_per_node, c.tasks_per_node);
    EXPECT_EQ(preflight_step(*p), !c.checked);
  }
}
