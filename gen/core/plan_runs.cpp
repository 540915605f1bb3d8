// logs: and sweep: in the plan. A sweep is a job array whose tasks each export one combination
// of the parameters' values; its runs must not share a checkpoint, an output file or a log
// directory, so each of these must name the array task or every parameter. An output named by
// the sweep's values is opened by the script itself once they are set; sbatch's own file, named
// by the array task, keeps what comes before and Slurm's own messages. logs: puts a tee in front of
// every rank: the rank's lines go to its own file and, unchanged, to srun (the job's output and
// ddp-watch's view of it keep every line).
#include <algorithm>

#include "gen/core/plan_parts.hpp"
#include "gen/core/references.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen::detail {
namespace {

// The references that differ between the tasks of one array.
bool names_task(const std::string& name) {
  return name == "SLURM_ARRAY_TASK_ID" || name == "SLURM_JOB_ID" || name == "SLURM_JOBID";
}

// The references of text, with the job's env values it names followed (an env value may be
// built from ${SWEEP_LR}), each name once.
void collect(const Job& job, const std::string& text, std::vector<std::string>& out, int depth) {
  for (const auto& name : refs::names(text)) {
    if (std::ranges::find(out, name) != out.end()) continue;
    out.push_back(name);
    if (depth > 8) continue;
    for (const auto& [key, value] : job.env)
      if (key == name) collect(job, value, out, depth + 1);
  }
}

// True when text differs between the array's tasks: it names the array task (or the job id,
// which each task has its own of) or every sweep variable.
bool differs_per_task(const Job& job, const std::string& text) {
  std::vector<std::string> names;
  collect(job, text, names, 0);
  if (std::ranges::any_of(names, names_task)) return true;
  const auto vars = sweep_variables(job);
  return std::ranges::all_of(
      vars, [&](const auto& v) { return std::ranges::find(names, v) != names.end(); });
}

// The launcher options of the job's launcher (torchrun's or accelerate's; none for the others).
const std::vector<std::string>& launcher_options(const Job& job) {
  static const std::vector<std::string> none;
  if (job.launcher == Launcher::torchrun) return job.torchrun_options;
  if (job.launcher == Launcher::accelerate) return job.accelerate_options;
  return none;
}

// Whether option is one of long's spellings or an abbreviation argparse reads as it: at least
// min_size characters, so that it is no other option's start ("--mod", not "--mo" of
// --monitor-interval).
bool reads_as(const std::string& option, std::initializer_list<std::string_view> long_forms,
              std::size_t min_size) {
  const std::string name = option.substr(0, option.find('='));
  return name.size() >= min_size &&
         std::ranges::any_of(long_forms, [&](std::string_view l) { return l.starts_with(name); });
}

// -m, --module: the script is a module, run as "python -m".
bool names_module(const std::string& option) {
  return option == "-m" || reads_as(option, {"--module"}, 5);
}

// --no-python, --no_python: the script is a program, not run with python.
bool names_program(const std::string& option) {
  return reads_as(option, {"--no-python", "--no_python"}, 5);
}

// logs: the launcher runs each worker through the rank-log wrapper, as a program
// (--no_python), which argparse's -m cannot be beside.
void check_logs(const Job& job) {
  const std::string key = job.launcher == Launcher::accelerate ? "accelerate" : "torchrun";
  for (const std::string& option : launcher_options(job))
    if (names_module(option))
      reject(job, key,
             ddp::text::quote(key + ".options") + ": " + ddp::text::quote(option) +
                 " with \"logs\": each worker runs through the rank-log wrapper, which the " +
                 "launcher starts as a program (--no_python), and it refuses that beside -m; " +
                 "drop \"logs\", or drop " + option +
                 " and name the module's file in \"script\" (a later version may take both)");
}

void check_sweep(const Job& job) {
  // The job's env is exported after the sweep's values: its key would be every task's value.
  for (const auto& [name, values] : job.sweep->parameters)
    for (const auto& [key, value] : job.env)
      if (key == refs::sweep_variable(name))
        reject(job, "env",
               ddp::text::quote("env." + key) + " cannot be set: " + key +
                   " is each array task's value of the sweep parameter " + ddp::text::quote(name) +
                   ", and this one would replace it in every task; list the values under "
                   "\"sweep.parameters\"");
  const std::string fix =
      "; name the array task in it, e.g. ${SLURM_ARRAY_TASK_ID}, or every sweep parameter";
  if (job.checkpoint && !differs_per_task(job, job.checkpoint->dir))
    reject(job, "checkpoint",
           "\"checkpoint.dir\" " + ddp::text::quote(job.checkpoint->dir) +
               " is the same for every task of the sweep, whose runs would resume from each "
               "other's checkpoints" +
               fix);
  if (job.logs && !differs_per_task(job, job.logs->dir))
    reject(job, "logs",
           "\"logs.dir\" " + ddp::text::quote(job.logs->dir) +
               " is the same for every task of the sweep, whose ranks would write the same "
               "files" +
               fix);
  for (const auto& [key, value] : {std::pair{"output", job.output}, {"error", job.error}}) {
    // A name with the sweep's values is opened by the script once they are set.
    std::string path;
    if (names_sweep(job, value)) {
      if (auto problem = refs::script_filename(value, sweep_variables(job), &path))
        reject(job, key, ddp::text::quote(std::string(key)) + ": " + *problem);
      if (!differs_per_task(job, path))
        reject(job, key,
               ddp::text::quote(std::string(key)) + " " + ddp::text::quote(value) +
                   " is the same file for tasks of the sweep that differ in a parameter it "
                   "leaves out; name every sweep parameter in it, or the array task "
                   "(${SLURM_ARRAY_TASK_ID})");
      continue;
    }
    // sbatch's own patterns count too: %a (the array task) and %j (each task's job id).
    const auto names = refs::names(value);
    const bool pattern =
        value.find("%a") != std::string::npos || value.find("%j") != std::string::npos;
    if (!value.empty() && !pattern && !std::ranges::any_of(names, names_task))
      reject(job, key,
             ddp::text::quote(std::string(key)) + " " + ddp::text::quote(value) +
                 " is the same file for every task of the sweep; name the array task in it, "
                 "e.g. ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}, or the sweep's values "
                 "(${SWEEP_<NAME>})");
  }
  for (const auto& option : job.sbatch)
    if (option.starts_with("--array") || option.starts_with("-a"))
      reject(job, "sbatch",
             "\"sweep\" makes the job array itself; drop " + ddp::text::quote(option));
}

// The code of the per-rank tee: stderr, then stdout, through tee on to where they went and,
// line by line, appended to DIR/rank-R.log; then the command. rank is a reference that expands
// where the code runs (each task, or each worker). tee passes every byte on at once (a
// progress bar without a newline included); awk writes whole lines (one write each), so the
// lines of the two streams never break into each other in the file. The stdout chain writes
// its errors into the stderr chain, whose awk holds the task's stderr: srun waits for all of
// them to end, so a rank's last lines reach its file. They ignore the signals the step's
// processes may get (ddp-watch's SIGABRT for the stacks, a requeue notice): a stack a rank
// prints must reach srun and its file. No single quote: the code is written between single
// quotes.
std::string rank_log_code(const std::string& rank) {
  const std::string chain =
      "(trap \"\" HUP INT QUIT ABRT TERM USR1 USR2; exec tee >(exec awk \"{ print; fflush() }\" >> "
      "\"$ddpgen_log\")";
  return "ddpgen_log=$1/rank-" + rank + ".log; shift; exec 2> >" + chain + " >&2); exec > >" +
         chain + "); unset ddpgen_log; exec \"$@\"";
}

// launcher none: the command runs in the batch shell, where nothing waits for a tee that
// outlives it, so the streams go through pipelines that bash waits for: awk passes each line on
// and appends it to DIR/rank-0.log (no watchdog reads this output, so a line may wait for its
// newline), and the exit status is the command's (pipefail).
std::string batch_log_code() {
  const std::string awk =
      "(trap \"\" HUP INT QUIT ABRT TERM USR1 USR2; export ddpgen_log; exec awk \"{ print; "
      "fflush(); print >> ENVIRON[\\\"ddpgen_log\\\"]; fflush(ENVIRON[\\\"ddpgen_log\\\"]) }\")";
  return "ddpgen_log=$1/rank-0.log; shift; set -o pipefail; { \"$@\" 2>&1 1>&3 3>&- | " + awk +
         " >&2; } 3>&1 | " + awk;
}

Word rank_log_word(const std::string& code) {
  return {"bash -c '" + code + "' ddpgen-rank-log \"$DDP_LOG_DIR\"", {}};
}

// torchrun and accelerate start the workers: the tee goes in front of each worker, which
// they run as a program (--no_python) and which reads its rank from RANK. A job's own
// --no-python beside ddpgen's is the same flag twice, which argparse takes.
void add_worker_logs(Plan& plan, const Job& job, const Profile& profile) {
  std::vector<Word> words = {rank_log_word(rank_log_code("${RANK:-0}"))};
  // With the job's own --no-python the script is the program the wrapper runs.
  if (!std::ranges::any_of(launcher_options(job), names_program)) {
    const std::vector<Word> python = python_words(job, profile);
    words.insert(words.end(), python.begin(), python.end());
    words.push_back({"-u", {}});
  }
  auto& cmd = plan.command_words;
  const auto script = cmd.begin() + static_cast<long>(plan.script_word);
  if (job.launcher == Launcher::accelerate) {
    plan.wrapper_args.push_back({"--no_python", {}});
  } else {
    words.insert(words.begin(), Word{"--no_python", {}});
  }
  cmd.insert(script, words.begin(), words.end());
}

// One task per process: the file is named by the task's RANK, which --ddp exports and which,
// without the plugin, the per-task setup computes, so the tee's word runs that setup first (the
// wrapper inside the container runs it again, to the same values). Not SLURM_PROCID: a Slurm
// 26.05 site with a topology plugin numbers the tasks in topology order, so task 0 can be RANK 4
// (doc/admins.md, "Sites with a topology plugin"). launcher none: the batch shell's command,
// rank 0 (the workers a program starts itself write where it sends them).
void add_logs(Plan& plan, const Job& job, const Profile& profile) {
  plan.logs_dir = refs::home_tilde(job.logs->dir);
  if (plan.torchrun_mode) return add_worker_logs(plan, job, profile);
  if (plan.batch_launch) {
    plan.rank_log_words = {rank_log_word(batch_log_code())};
  } else if (plan.plugin) {
    plan.rank_log_words = {rank_log_word(rank_log_code("${RANK:-0}"))};
  } else {
    plan.rank_log_words = {{"bash -c \"$ddpgen_task_setup\"'" + rank_log_code("${RANK:-0}") +
                                "' ddpgen-task " + task_setup_args(plan) + " \"$DDP_LOG_DIR\"",
                            {}}};
  }
}

}  // namespace

std::vector<std::string> sweep_variables(const Job& job) {
  std::vector<std::string> out;
  if (job.sweep)
    for (const auto& [name, values] : job.sweep->parameters)
      out.push_back(refs::sweep_variable(name));
  return out;
}

bool names_sweep(const Job& job, const std::string& value) {
  const auto vars = sweep_variables(job);
  return std::ranges::any_of(refs::names(value), [&](const std::string& name) {
    return std::ranges::find(vars, name) != vars.end();
  });
}

std::string sbatch_file(const Job& job, const std::string& value, std::string_view suffix) {
  std::string pattern;
  if (!names_sweep(job, value)) {
    refs::filename_pattern(value, &pattern);
    return pattern;
  }
  // The directories before the first one named by a sweep value, then a name of the array task.
  const auto parts = ddp::text::split(value, '/');
  std::string dir;
  for (std::size_t i = 0; i + 1 < parts.size() && !names_sweep(job, std::string(parts[i])); ++i)
    dir += std::string(parts[i]) + "/";
  refs::filename_pattern(dir, &pattern);
  return pattern + "%x-%A_%a" + std::string(suffix);
}

void check_runs(const Job& job) {
  if (job.logs) check_logs(job);
  if (job.sweep) check_sweep(job);
}

void add_runs(Plan& plan, const Job& job, const Profile& profile) {
  if (job.logs) add_logs(plan, job, profile);
  if (!job.sweep) return;
  const Sweep& s = *job.sweep;
  const auto names = sweep_variables(job);
  for (const auto& [name, values] : s.parameters) plan.sweep_names.push_back(name);
  for (long i = 0; i < s.size(); ++i) {
    const auto values = s.values(i);
    EnvList env;
    for (std::size_t k = 0; k < names.size(); ++k) env.emplace_back(names[k], values[k]);
    plan.sweep_tasks.push_back(std::move(env));
  }
  plan.sweep_parallel = s.parallel;
  plan.errors_apart = !job.error.empty();
  plan.append = std::ranges::find(plan.directives, "--open-mode=append") != plan.directives.end();
  for (const auto& [error, value] : {std::pair{false, job.output}, {true, job.error}}) {
    if (!names_sweep(job, value)) continue;
    std::string path;
    refs::script_filename(value, names, &path);
    plan.sweep_files.push_back({error, sbatch_file(job, value, error ? ".err" : ".out"), path});
  }
}

}  // namespace ddpgen::detail
