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
  o.command = {"srun", "--ddp", "train.py"};
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

void expect_watch(std::vector<std::string> args, const WatchInvocation& w) {
  args.insert(args.end(), {"--", "srun", "--ddp", "train.py"});  // as ddpgen's training step
  auto parsed = ddp::watch::parse_options(args);
  ASSERT_TRUE(parsed) << parsed.error().message;
  auto want = watch_options(w);
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
  for (std::size_t i = 0; i < watches.size(); ++i) expect_watch(watch_lines[i], watches[i]);
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
