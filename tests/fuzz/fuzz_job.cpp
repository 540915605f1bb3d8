// libFuzzer target: job files. Leading lines "#set KEY=VALUE" become --set overrides, so the
// overrides are fuzzed too. Every input is either refused with a one-line message or planned
// against the local profile and rendered.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_common.hpp"
#include "gen/core/job.hpp"
#include "gen/core/profile.hpp"

namespace {

using namespace ddpgen;

const Profile& local_profile() {
  static const Profile profile = [] {
    auto doc = read_profile_doc(fuzz::read_or_die(DDP_FUZZ_PROFILE), "local.yaml");
    if (!doc) fuzz::broken("profile", doc.error().to_string());
    auto decoded = decode_profile(*doc, Profile{});
    if (!decoded) fuzz::broken("profile", decoded.error().to_string());
    decoded->name = "local";
    return *decoded;
  }();
  return profile;
}

// Splits the leading "#set " lines off text.
std::vector<std::string> take_sets(std::string& text) {
  std::vector<std::string> sets;
  while (text.starts_with("#set ")) {
    const auto nl = text.find('\n');
    sets.push_back(text.substr(5, nl == std::string::npos ? nl : nl - 5));
    text.erase(0, nl == std::string::npos ? text.size() : nl + 1);
  }
  return sets;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  const auto sets = take_sets(text);
  auto job = decode_job(text, "fuzz.yaml", sets);
  if (!job) {
    fuzz::check_message(job.error());
    return 0;
  }
  auto planned = plan(*job, local_profile());
  if (!planned) {
    fuzz::check_message(planned.error());
    return 0;
  }
  fuzz::check_render(*planned);
  return 0;
}
