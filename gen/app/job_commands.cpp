// ddpgen status JOBID and ddpgen logs JOBID: one look at a job, and its output file as it is.
#include <cstring>
#include <iostream>

#include "gen/app/files.hpp"
#include "gen/app/job_output.hpp"
#include "gen/app/slurm_jobs.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen::app {
namespace {

// The job as scontrol knows it, else as sacct does; an error naming both when neither does.
Result<JobStatus> find_job(const std::string& id) {
  auto now = scontrol_job(id);
  if (!now) return std::unexpected(now.error());
  if (*now) return **now;
  auto acct = sacct_job(id);
  if (acct && *acct) return **acct;
  return ddp::fail(
      {"job " + id, 0, 0},
      "not known to scontrol (it forgets a job MinJobAge after its end) " +
          (acct ? std::string("nor to sacct") : "and sacct cannot say: " + acct.error().message));
}

}  // namespace

Result<void> print_job_status(const std::string& id) {
  auto s = find_job(id);
  if (!s) return std::unexpected(s.error());
  const auto row = [](const char* name, const std::string& value, const char* none = "-") {
    std::cout << "  " << name << std::string(10 - std::strlen(name), ' ')
              << (value.empty() ? none : ddp::text::printable(value)) << "\n";
  };
  std::cout << state_line(*s) << (s->from_accounting ? " (from sacct)" : "") << "\n";
  row("name", s->name);
  row("state", s->state);
  row("reason", s->reason);
  row("nodes", s->nodes);
  row("elapsed", s->elapsed);
  row("exit", s->exit_code);
  row("restarts", s->from_accounting ? "" : std::to_string(s->restarts), "unknown (sacct)");
  row("excluded", s->excluded, s->from_accounting ? "unknown (sacct)" : "-");
  const auto files = output_files(*s);
  row("output", ddp::text::join(files, ", "), "unknown (sacct does not say)");
  const std::string verdict = last_verdict_in(*s);
  row("verdict", verdict, files.empty() ? "unknown" : "none in the output");
  std::cout << std::flush;
  return {};
}

Result<void> print_job_output(const std::string& id) {
  auto s = scontrol_job(id);
  if (!s) return std::unexpected(s.error());
  if (!*s)
    return ddp::fail({"job " + id, 0, 0},
                     "not known to scontrol, which names its output file (it forgets a job "
                     "MinJobAge after its end); look in the job's directory (slurm-" +
                         id + ".out by default)");
  const auto files = output_files(**s);
  if (files.empty()) return ddp::fail({"job " + id, 0, 0}, "its output goes to /dev/null");
  auto text = read_file(files[0]);
  if (!text) {
    if ((*s)->state == "PENDING")
      return ddp::fail({"job " + id, 0, 0}, "PENDING: no output yet (it will be in " +
                                                ddp::text::quote(files[0], 200) + ")");
    return std::unexpected(text.error());
  }
  if (auto written = write_stdout(*text); !written) return written;
  if (files.size() > 1)
    std::cerr << "ddpgen: job " << id << "'s stderr is in " << ddp::text::printable(files[1])
              << "\n";
  return {};
}

}  // namespace ddpgen::app
