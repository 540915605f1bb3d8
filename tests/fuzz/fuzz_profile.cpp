// libFuzzer target: site profiles. Every input is either refused with a one-line message or
// decoded, then a fixed job is planned against it and rendered. The checks are those of
// fuzz_common.hpp, each of which aborts (a failing input, saved by libFuzzer) when broken: an
// error message is non-empty and free of control characters; a profile that passed every check
// renders; the script holds no control character but newlines and tabs. And a profile never
// changes the job's own size: the plan keeps its one node.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.hpp"
#include "gen/core/job.hpp"
#include "gen/core/profile.hpp"

namespace {

using namespace ddpgen;

// A job that most profiles accept: no partition, GPU type or account named.
const Job& fixed_job() {
  static const Job job = [] {
    auto decoded = decode_job(
        "nodes: 1\ntime: \"10\"\nscript: train.py\nargs: [--x]\ncheckpoint: {dir: ck, requeue: "
        "true}\nenv: {A: b}\nmodules: [m]\n",
        "job.yaml", {});
    if (!decoded) fuzz::broken("job", decoded.error().to_string());
    return *decoded;
  }();
  return job;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto doc = read_profile_doc(text, "fuzz.yaml");
  if (!doc) {
    fuzz::check_message(doc.error());
    return 0;
  }
  auto profile = decode_profile(*doc, Profile{});
  if (!profile) {
    fuzz::check_message(profile.error());
    return 0;
  }
  profile->name = "fuzz";
  auto planned = plan(fixed_job(), *profile);
  if (!planned) {
    fuzz::check_message(planned.error());
    return 0;
  }
  if (planned->nodes != 1 || planned->spares != 0)
    fuzz::broken("a profile changed the job's nodes", std::to_string(planned->nodes));
  fuzz::check_render(*planned);
  return 0;
}
