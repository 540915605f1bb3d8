// The settings tables (gen/core/settings.hpp): a table decodes each kind of row into its field
// and refuses what the row's bounds or choices refuse; the job's tables hold the bounds and the
// required keys the reader enforces.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gen/core/job.hpp"
#include "gen/core/job_keys.hpp"
#include "gen/core/profile_keys.hpp"
#include "gen/core/schema.hpp"
#include "gen/core/settings.hpp"

namespace ddpgen {
namespace {

struct Toy {
  std::string s;
  long n = 0;
  std::optional<long> opt;
  bool b = false;
  std::string c;
  long d = 0;
  long t = 0;
  std::optional<double> share;
  std::vector<std::string> list, words;
  EnvList env;
};

const settings::Table<Toy>& toy_table() {
  using namespace settings;
  static const Table<Toy> table = {
      string("s", &Toy::s),
      integer("n", &Toy::n, 1, 10),
      integer("opt", &Toy::opt, 0, 5),
      boolean("b", &Toy::b),
      choice("c", &Toy::c, {"x", "y"}),
      duration("d", &Toy::d, 1, 3600),
      time("t", &Toy::t),
      share("share", &Toy::share),
      strings("list", &Toy::list),
      words("words", &Toy::words),
      env("env", &Toy::env),
  };
  return table;
}

// Decodes text with the toy table: the error's message, or empty.
std::string decode_toy(const std::string& text, Toy& toy) {
  auto doc = parse_yaml(text, "toy.yaml");
  if (!doc) return doc.error().message;
  try {
    toy_table().decode(toy, StrictReader("toy.yaml"), *doc, "");
  } catch (const Error& error) {
    return error.message;
  }
  return "";
}

TEST(Settings, RowsDecodeEachKindIntoTheirField) {
  Toy toy;
  ASSERT_EQ(decode_toy("{s: a, n: 3, opt: 0, b: true, c: y, d: 5m, t: 1-00, share: 0.25, "
                       "list: [p, q], words: u v, env: {A: '1'}}",
                       toy),
            "");
  EXPECT_EQ(toy.s, "a");
  EXPECT_EQ(toy.n, 3);
  EXPECT_EQ(toy.opt, 0);
  EXPECT_TRUE(toy.b);
  EXPECT_EQ(toy.c, "y");
  EXPECT_EQ(toy.d, 300);
  EXPECT_EQ(toy.t, 86400);
  EXPECT_EQ(toy.share, 0.25);
  EXPECT_EQ(toy.list, (std::vector<std::string>{"p", "q"}));
  EXPECT_EQ(toy.words, (std::vector<std::string>{"u", "v"}));
  EXPECT_EQ(toy.env, (EnvList{{"A", "1"}}));
}

TEST(Settings, RowsRefuseWhatTheirKindRefuses) {
  struct Case {
    std::string text, message_part;
  };
  const std::vector<Case> cases = {
      {"nn: 3", "did you mean \"n\""},
      {"n: 11", "\"n\""},
      {"n: 0", "\"n\""},
      {"opt: 6", "\"opt\""},
      {"c: z", "\"c\""},
      {"d: 2h", "\"d\" must be from 1s to 1h, got \"2h\""},
      {"d: 5q", "\"d\""},
      {"t: 1:2:3:4", "\"t\": malformed time \"1:2:3:4\""},
      {"share: 1.5", "\"share\" must be a share of the median"},
      {"env: {1A: x}", "1A"},
  };
  for (const auto& c : cases) {
    Toy toy;
    const std::string message = decode_toy(c.text, toy);
    EXPECT_NE(message.find(c.message_part), std::string::npos) << c.text << ": " << message;
  }
}

TEST(Settings, KeyPathsDotTheKeysOfSections) {
  settings::Catalog catalog = {
      {"top",
       {{"a", {settings::Kind::string}},
        {"sec", settings::Type::nested(settings::Kind::section, "sec")},
        {"list", settings::Type::nested(settings::Kind::sections, "sec")}}},
      {"sec", {{"x", {settings::Kind::boolean}}, {"y", {settings::Kind::string}}}},
  };
  EXPECT_EQ(settings::key_paths(catalog, "top"),
            (std::vector<std::string>{"a", "sec", "sec.x", "sec.y", "list"}));
}

// Each table's names are unique, and every section a row names is a table of its catalog.
TEST(Settings, CatalogsAreWhole) {
  for (const auto* catalog : {&job_catalog(), &profile_catalog()})
    for (const auto& [name, fields] : *catalog) {
      std::vector<std::string> names;
      for (const auto& field : fields) {
        names.push_back(field.name);
        if (!field.type.section.empty()) {
          EXPECT_TRUE(catalog->contains(field.type.section)) << name << "." << field.name;
        }
      }
      std::ranges::sort(names);
      EXPECT_EQ(std::ranges::adjacent_find(names), names.end()) << name;
    }
}

// The keys whose rows say "required", each table's.
TEST(Settings, RequiredColumnsNameTheKeysTheReaderRequires) {
  std::vector<std::string> required;
  for (const auto* catalog : {&job_catalog(), &profile_catalog()})
    for (const auto& [name, fields] : *catalog)
      for (const auto& field : fields)
        if (field.required) required.push_back(name + "." + field.name);
  std::ranges::sort(required);
  // checkpoint.dir is required but for launcher lightning: the plan's check, not the reader's
  // (tests/golden/errors/checkpoint-needs-dir).
  EXPECT_EQ(required, (std::vector<std::string>{"container.image", "job.script", "logs.dir",
                                                "partition.name", "sweep.parameters",
                                                "watchdog.timeout"}));
}

// Every integer key of the job takes its maximum and refuses one more, naming its path.
TEST(Settings, JobIntegerRowsHoldTheReadersBounds) {
  // The required keys of the sections the integer keys are in.
  const std::vector<std::string> base = {"checkpoint.dir=/c", "watchdog.timeout=1m",
                                         "sweep.parameters={lr: [1]}"};
  const auto& catalog = job_catalog();
  int checked = 0;
  for (const auto& path : job_key_paths()) {
    const auto dot = path.find('.');
    const std::string table = dot == std::string::npos ? "job" : path.substr(0, dot);
    const std::string key = path.substr(dot == std::string::npos ? 0 : dot + 1);
    const auto& fields = catalog.at(table);
    const auto field = std::ranges::find(fields, key, &settings::Field::name);
    ASSERT_NE(field, fields.end()) << path;
    if (field->type.kind != settings::Kind::integer) continue;
    auto sets = base;
    sets.push_back(path + "=" + std::to_string(field->type.max));
    EXPECT_TRUE(decode_job("time: 10\nscript: t.py\n", "job.yaml", sets)) << path;
    sets.back() = path + "=" + std::to_string(field->type.max + 1);
    auto refused = decode_job("time: 10\nscript: t.py\n", "job.yaml", sets);
    ASSERT_FALSE(refused) << path;
    EXPECT_NE(refused.error().to_string().find(path), std::string::npos)
        << refused.error().to_string();
    ++checked;
  }
  // nodes, gpus_per_node, procs_per_node, checkpoint.signal_time, checkpoint.max_restarts,
  // heal.max_requeues, sweep.parallel, spares, heal.max_respawns, cpus_per_task: a new integer
  // row adds one.
  EXPECT_EQ(checked, 10);
}

TEST(Settings, JobSectionChecksRunAfterTheRows) {
  struct Case {
    std::string text, message;
  };
  const std::string head = "time: 10\nscript: t.py\n";
  const std::vector<Case> cases = {
      {head + "container: {runtime: pyxis}", "\"container.image\" is required"},
      {head + "checkpoint: {dir: c, requeue_on_failure: true}",
       "\"checkpoint.requeue_on_failure\" needs \"checkpoint.requeue: true\" (the job must be "
       "requeueable)"},
      {head + "watchdog: {grace: 5s}", "\"watchdog.timeout\" is required (e.g. 10m)"},
      {head + "preflight: {pairs_threshold: 0.3}",
       "\"preflight.pairs_threshold\" needs \"preflight.pairs: true\""},
      {head + "preflight: {timeout: 2h}",
       "\"preflight.timeout\" must be from 1s to 1h, got \"2h\""},
      {head + "activate: {conda: a, venv: b}",
       "\"activate\" takes one of {conda: NAME_OR_PATH}, {venv: PATH} or {source: FILE}"},
      {"time: 10\n", "\"script\" is required (the program to run)"},
  };
  for (const auto& c : cases) {
    auto job = decode_job(c.text, "job.yaml", {});
    ASSERT_FALSE(job) << c.text;
    EXPECT_EQ(job.error().message, c.message) << c.text;
  }
}

}  // namespace
}  // namespace ddpgen
