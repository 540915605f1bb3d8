// ddpgen submit: from a rendered script to a job id, and on to the job's end with --follow.
#include <iostream>

#include "gen/app/commands.hpp"
#include "gen/app/paths.hpp"
#include "gen/app/profile_store.hpp"
#include "gen/app/slurm_jobs.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen::app {
namespace {

template <typename T>
T unwrap(Result<T> result) {
  if (!result) throw result.error();
  if constexpr (!std::is_void_v<T>) return std::move(*result);
}

// validate --live before sbatch: a profile that names a partition this cluster lacks, or allows
// more than Slurm does, is refused here with the reason. Where scontrol cannot answer, sbatch is
// left to judge and that is said.
void check_live(const std::string& profile_name) {
  const Profile profile = unwrap(load_profile(profile_name, profile_dirs()));
  auto conflicts = report_live(profile, profile_name, true);
  if (!conflicts) {
    std::cerr << "ddpgen: live: not checked (" << conflicts.error().to_string() << ")\n";
    return;
  }
  if (*conflicts > 0)
    throw Error{
        "the profile disagrees with this cluster (above): fix the profile, or submit "
        "with --no-live and let sbatch judge",
        {"profile " + profile_name, 0, 0}};
}

}  // namespace

int submit(const std::string& script, const SubmitOptions& o) {
  if (o.live) check_live(o.profile);
  const std::string path = unwrap(place_script(script, o.job_file, o.output));
  const std::string id = unwrap(sbatch(path));
  if (o.parsable)
    std::cout << id << "\n";
  else
    std::cout << "submitted job " << id << " (script " << ddp::text::printable(path) << ")\n";
  std::cout << std::flush;
  if (!o.follow) {
    // With --parsable, stdout holds the id alone: the script's place is said here.
    std::cerr << "ddpgen: " << (o.parsable ? "script " + ddp::text::printable(path) + "; " : "")
              << "follow it with: ddpgen logs " << id << " --follow\n";
    return 0;
  }
  return follow_job(id);
}

}  // namespace ddpgen::app
