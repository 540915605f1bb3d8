// ddpgen status JOBID and ddpgen logs JOBID: one look at a job, and its output file as it is.
#include <algorithm>
#include <cstring>
#include <iostream>
#include <optional>

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

// The tasks of the sweep id, each with its state and values; nothing for a job that is no array.
void print_sweep_tasks(const std::string& id) {
  if (id.find('_') != std::string::npos) return;
  auto records = array_records(id);
  if (!records || records->empty()) return;
  const auto values = sweep_values(id);
  std::cout << "  tasks\n";
  for (const auto& record : *records) {
    const JobStatus& s = record.status;
    std::string state = s.state + (s.reason.empty() ? "" : " (" + s.reason + ")");
    if (!s.nodes.empty() && s.state != "PENDING") state += " on " + s.nodes;
    for (long task : record.tasks) {
      const auto it = values.find(task);
      std::cout << "    " << task << "  " << ddp::text::printable(state)
                << (it == values.end() ? "" : "  " + ddp::text::printable(it->second)) << "\n";
    }
  }
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
  if (!s->from_accounting) print_sweep_tasks(id);
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
  // The output, then the file a sweep's script continued it in.
  JobStatus out_only = **s;
  out_only.std_err.clear();
  const auto out_files = output_files(out_only);
  for (std::size_t i = 0; i < out_files.size(); ++i) {
    auto text = read_file(out_files[i]);
    if (!text) {
      if (i == 0 && (*s)->state == "PENDING")
        return ddp::fail({"job " + id, 0, 0}, "PENDING: no output yet (it will be in " +
                                                  ddp::text::quote(out_files[0], 200) + ")");
      return std::unexpected(text.error());
    }
    if (auto written = write_stdout(*text); !written) return written;
  }
  std::vector<std::string> err_files;
  for (const auto& f : files)
    if (std::ranges::find(out_files, f) == out_files.end()) err_files.push_back(f);
  if (!err_files.empty())
    std::cerr << "ddpgen: job " << id << "'s stderr is in "
              << ddp::text::printable(ddp::text::join(err_files, ", ")) << "\n";
  return {};
}

Result<void> print_rank_log(const std::string& id, long rank) {
  auto s = scontrol_job(id);
  if (!s) return std::unexpected(s.error());
  const Location at{"job " + id, 0, 0};
  if (!*s)
    return ddp::fail(at,
                     "not known to scontrol, which names its output file, where the rank logs' "
                     "directory is written; look in the job's logs.dir");
  // The script says where the rank logs are in its output (a sweep's: in the file it
  // continues in).
  std::optional<std::string> dir;
  for (const auto& file : output_files(**s)) {
    auto text = read_file(file);
    if (!text) return std::unexpected(text.error());
    if ((dir = rank_log_dir_in(*text))) break;
  }
  if (!dir)
    return ddp::fail(at, (*s)->state == "PENDING"
                             ? std::string("PENDING: no rank logs yet")
                             : "its output names no rank logs (the job file has no logs: key)");
  const std::string path = *dir + "/rank-" + std::to_string(rank) + ".log";
  auto log = read_file(path);
  if (!log) return std::unexpected(log.error());
  return write_stdout(*log);
}

}  // namespace ddpgen::app
