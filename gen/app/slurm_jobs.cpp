// Submitting a job and asking Slurm about it: sbatch, scontrol and sacct through the one runner
// (libddp/sys/exec.hpp, as live.cpp does): no shell, argv as it is, their stderr captured with
// their output so that a refusal comes back in their own words, and a deadline.
#include "gen/app/slurm_jobs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>

#include "gen/app/files.hpp"
#include "libddp/sys/exec.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen::app {
namespace {

// A status look must not hang a follower when slurmctld is slow (scontrol retries for
// MessageTimeout, 10 s by default); sbatch may wait longer for a busy controller.
constexpr std::chrono::seconds k_look_deadline{20};
constexpr std::chrono::seconds k_submit_deadline{60};

struct Ran {
  int status = 0;
  std::string words;  // stdout and stderr, in the order written
};

// Runs a Slurm client; fails naming it when it cannot start or passes the deadline.
Result<Ran> client(std::vector<std::string> argv, std::chrono::seconds deadline) {
  ddp::sys::RunOptions options;
  options.deadline = deadline;
  options.merge_stderr = true;
  options.max_output = 4 << 20;
  auto ran = ddp::sys::run(argv, options);
  if (!ran)
    return ddp::fail({argv[0], 0, 0},
                     ran.error().message + " (run this on a node with Slurm's clients)");
  return Ran{ran->status, std::move(ran->out)};
}

// A client's words for an error message: one line, printable, at most a few hundred characters.
std::string said(const std::string& words) {
  std::string out;
  for (const auto line : ddp::text::split(words, '\n')) {
    const auto text = ddp::text::trim(line);
    if (text.empty()) continue;
    if (!out.empty()) out += " / ";
    out += text;
  }
  return ddp::text::printable(out.empty() ? "(no message)" : out, 400);
}

// The contents of path when it is a regular file, nothing when there is none; an error for a
// symlink (never followed) or anything else.
Result<std::optional<std::string>> existing_script(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    return ddp::fail({path, 0, 0}, std::string("cannot look at it: ") + std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode))
    return ddp::fail({path, 0, 0},
                     "is a symbolic link: ddpgen does not write through one; remove it, or give "
                     "the script another place with -o FILE");
  if (!S_ISREG(st.st_mode))
    return ddp::fail({path, 0, 0},
                     "exists and is not a regular file; give the script another "
                     "place with -o FILE");
  auto text = read_file(path);
  if (!text) return std::unexpected(text.error());
  return std::optional<std::string>(std::move(*text));
}

}  // namespace

Result<std::optional<JobStatus>> scontrol_job(const std::string& id) {
  auto ran = client({"scontrol", "show", "job", "--oneliner", id}, k_look_deadline);
  if (!ran) return std::unexpected(ran.error());
  if (ran->status != 0) {
    if (scontrol_says_no_such_job(ran->words)) return std::nullopt;
    return ddp::fail({"scontrol show job " + id, 0, 0}, said(ran->words));
  }
  auto status = parse_scontrol_job(ran->words, id);
  if (!status) return std::unexpected(status.error());
  return std::optional<JobStatus>(std::move(*status));
}

Result<std::optional<JobStatus>> sacct_job(const std::string& id) {
  auto ran = client({"sacct", "-X", "-n", "-P", "-j", id, "-o", k_sacct_format}, k_look_deadline);
  if (!ran) return std::unexpected(ran.error());
  if (ran->status != 0) return ddp::fail({"sacct", 0, 0}, said(ran->words));
  return parse_sacct_job(ran->words, id);
}

Result<std::vector<ArrayRecord>> array_records(const std::string& id) {
  auto ran = client({"scontrol", "show", "job", "--oneliner", id}, k_look_deadline);
  if (!ran) return std::unexpected(ran.error());
  if (ran->status != 0) return ddp::fail({"scontrol show job " + id, 0, 0}, said(ran->words));
  return parse_array_records(ran->words);
}

std::map<long, std::string> sweep_values(const std::string& id) {
  auto ran = client({"scontrol", "write", "batch_script", id, "-"}, k_look_deadline);
  if (!ran || ran->status != 0) return {};
  return sweep_values_in_script(ran->words);
}

Result<std::string> sbatch(const std::string& script) {
  auto ran = client({"sbatch", "--parsable", script}, k_submit_deadline);
  if (!ran) return std::unexpected(ran.error());
  const auto id = ran->status == 0 ? parse_sbatch_id(ran->words) : std::nullopt;
  if (!id)
    return ddp::fail({"sbatch " + script, 0, 0}, "did not submit the job: " + said(ran->words));
  // What else sbatch said (its warnings) is the user's to read.
  for (const auto line : ddp::text::split(ran->words, '\n')) {
    const auto text = ddp::text::trim(line);
    if (!text.empty() && text.substr(0, text.find(';')) != *id)
      std::cerr << ddp::text::printable(text) << "\n";
  }
  return *id;
}

Result<std::string> place_script(const std::string& script, const std::string& job_file,
                                 const std::string& path_in) {
  const std::string path = path_in.empty() ? script_path_for(job_file) : path_in;
  auto existing = existing_script(path);
  if (!existing) return std::unexpected(existing.error());
  switch (script_write(*existing, script, job_file)) {
    case ScriptWrite::keep:
      return path;
    case ScriptWrite::refuse:
      return ddp::fail({path, 0, 0},
                       "exists and is not a script ddpgen rendered from a job file named " +
                           ddp::text::quote(job_file.substr(job_file.rfind('/') + 1)) +
                           ": not overwritten; move it away, or give the script another place "
                           "with -o FILE");
    case ScriptWrite::replace:
      std::cerr << "ddpgen: " << ddp::text::printable(path)
                << ": replacing the script rendered earlier from this job file\n";
      break;
    case ScriptWrite::create:
      break;
  }
  // Never into what lies at path: a symlink that appeared since the look above is replaced.
  auto written = write_file(path, script, false);
  if (!written) return std::unexpected(written.error());
  return path;
}

}  // namespace ddpgen::app
