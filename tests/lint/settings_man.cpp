// The man pages document every key of ddpgen's settings tables and no other: each top-level key
// has its ".It Cm KEY" paragraph in doc/man/ddpgen-job.5 or ddpgen-profile.5, and each key of a
// section is named in its section's paragraph (".Brq Cm KEY , Cm KEY ..."). The last test shows
// that the lint fails when a paragraph or a key is missing, or when a page names a key that no
// table has.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gen/core/job_keys.hpp"
#include "gen/core/profile_keys.hpp"

namespace ddpgen {
namespace {

using Names = std::vector<std::string>;

// What a man page documents: the names of its key list's items, and for each item the names in
// its paragraph's .Brq lines (with the .Cm lines that continue one after a trailing comma).
struct ManKeys {
  Names top;
  std::map<std::string, Names> section;  // paragraph's first key -> the keys named in braces
};

// The names after "Cm" on a mdoc line: ".It Cm pre , Cm post" -> pre, post.
Names cm_names(const std::string& line) {
  std::istringstream words(line);
  Names out;
  std::string word, previous;
  while (words >> word) {
    if (previous == "Cm" || previous == ".Cm") out.push_back(word);
    previous = word;
  }
  return out;
}

ManKeys man_keys(const std::string& text) {
  ManKeys out;
  std::istringstream lines(text);
  std::string line, paragraph;
  bool in_list = false, in_braces = false;
  while (std::getline(lines, line)) {
    if (line.starts_with(".Bl ")) in_list = true;
    if (line == ".El") in_list = false;
    if (!in_list) continue;
    const bool continues = in_braces && line.starts_with(".Cm ");
    in_braces = (line.starts_with(".Brq ") || continues) && line.ends_with(" ,");
    if (line.starts_with(".It ")) {
      const Names names = cm_names(line);
      out.top.insert(out.top.end(), names.begin(), names.end());
      paragraph = names.empty() ? "" : names.front();
    } else if (line.starts_with(".Brq ") || continues) {
      for (const auto& name : cm_names(line)) out.section[paragraph].push_back(name);
    }
  }
  return out;
}

// Each name of want missing from have, as "WHAT NAME".
void missing(const Names& want, const Names& have, const std::string& what, Names& problems) {
  for (const auto& name : want)
    if (std::ranges::find(have, name) == have.end()) problems.push_back(what + " " + name);
}

// The differences between catalog (top level named top) and the man page text.
Names problems(const settings::Catalog& catalog, const std::string& top, const std::string& text) {
  const ManKeys man = man_keys(text);
  Names table, problems;
  for (const auto& field : catalog.at(top)) table.push_back(field.name);
  missing(table, man.top, "no paragraph for key", problems);
  missing(man.top, table, "a paragraph for a key no table has:", problems);
  for (const auto& field : catalog.at(top)) {
    if (field.type.section.empty()) continue;
    Names keys;
    for (const auto& sub : catalog.at(field.type.section)) keys.push_back(sub.name);
    const auto it = man.section.find(field.name);
    const Names documented = it == man.section.end() ? Names{} : it->second;
    missing(keys, documented, "not named in the paragraph of " + field.name + ":", problems);
    missing(documented, keys,
            "named in the paragraph of " + field.name + ", no such key:", problems);
  }
  return problems;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const std::string k_job_page = DDP_MAN_DIR "/ddpgen-job.5";
const std::string k_profile_page = DDP_MAN_DIR "/ddpgen-profile.5";

TEST(SettingsMan, JobPageDocumentsEveryJobKeyAndNoOther) {
  const std::string text = read(k_job_page);
  ASSERT_FALSE(text.empty()) << k_job_page;
  EXPECT_EQ(problems(job_catalog(), "job", text), Names{});
}

TEST(SettingsMan, ProfilePageDocumentsEveryProfileKeyAndNoOther) {
  const std::string text = read(k_profile_page);
  ASSERT_FALSE(text.empty()) << k_profile_page;
  EXPECT_EQ(problems(profile_catalog(), "profile", text), Names{});
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Self-test: the page with a paragraph, a section key or a table key taken away, or with a key
// no table has, is refused, naming the key.
TEST(SettingsMan, FailsWhenTheJobPageAndTheTablesDisagree) {
  const std::string text = read(k_job_page);
  struct Case {
    std::string from, to, problem;
  };
  const std::vector<Case> cases = {
      {"\n.It Cm heal\n", "\n", "no paragraph for key heal"},
      {"\n.It Cm pre , Cm post\n", "\n.It Cm pre\n", "no paragraph for key post"},
      {", Cm pairs_threshold ,", ",", "not named in the paragraph of preflight: pairs_threshold"},
      {"\n.It Cm qos\n", "\n.It Cm qos , Cm qoss\n", "a paragraph for a key no table has: qoss"},
      {"Cm image , Cm runtime ,", "Cm image , Cm runtime , Cm tag ,",
       "named in the paragraph of container, no such key: tag"},
  };
  for (const auto& c : cases) {
    // A paragraph taken away joins the one before it, which then names keys of another table.
    const Names found = problems(job_catalog(), "job", replaced(text, c.from, c.to));
    EXPECT_NE(std::ranges::find(found, c.problem), found.end()) << c.problem;
  }
}

TEST(SettingsMan, FailsWhenTheProfilePageMissesAPartitionKey) {
  const std::string text = read(k_profile_page);
  EXPECT_EQ(problems(profile_catalog(), "profile",
                     replaced(text, "\n.Cm site_chooses .\n", "\n.Cm site_choose .\n")),
            (Names{"not named in the paragraph of partitions: site_chooses",
                   "named in the paragraph of partitions, no such key: site_choose"}));
}

}  // namespace
}  // namespace ddpgen
