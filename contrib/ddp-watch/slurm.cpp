#include "ddp-watch/slurm.hpp"

#include <unistd.h>

#include "libddp/sys/exec.hpp"
#include "libddp/util/text.hpp"

namespace ddp::watch {
namespace {

// squeue and scancel answer within a second on a healthy controller; a slow one gets ten.
constexpr std::chrono::seconds k_client_deadline{10};

}  // namespace

void announce(const std::string& text) {
  std::string line = "ddp-watch: " + ddp::text::printable(text) + "\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

std::vector<StepRow> running_steps(const std::string& job_id) {
  if (job_id.empty()) return {};
  ddp::sys::RunOptions options;
  options.deadline = k_client_deadline;
  auto ran = ddp::sys::run(
      {"squeue", "--noheader", "--steps", "--jobs=" + job_id, "--format=%i %N"}, options);
  if (!ran) {
    announce(ran.error().message);
    return {};
  }
  return ran->status == 0 ? parse_steps(ran->out, job_id) : std::vector<StepRow>{};
}

std::string self_path() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "ddp-watch";
}

bool run_command(const std::vector<std::string>& argv, std::chrono::seconds deadline) {
  ddp::sys::RunOptions options;
  options.deadline = deadline;
  options.capture = false;
  auto ran = ddp::sys::run(argv, options);
  if (!ran) announce(ran.error().message);
  return ran && ran->status == 0;
}

std::string capture(const std::vector<std::string>& argv, std::chrono::seconds deadline) {
  ddp::sys::RunOptions options;
  options.deadline = deadline;
  auto ran = ddp::sys::run(argv, options);
  if (!ran) announce(ran.error().message);
  return ran && ran->status == 0 ? ran->out : "";
}

bool signal_step(const std::string& step, const std::string& signal) {
  return run_command({"scancel", "--signal=" + signal, step}, k_client_deadline);
}

}  // namespace ddp::watch
