// The checks of a job's values before anything is planned: text that reaches an #SBATCH line,
// mail types, run-time references, and the keys that only some launchers take.
#include <algorithm>
#include <cctype>

#include "gen/core/duration.hpp"
#include "gen/core/plan_parts.hpp"
#include "gen/core/references.hpp"
#include "gen/core/shell.hpp"
#include "libddp/util/rules.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen::detail {
namespace {

const std::vector<std::string> k_mail_types = {
    "NONE",          "BEGIN",          "END",        "FAIL",       "REQUEUE",
    "ALL",           "INVALID_DEPEND", "STAGE_OUT",  "TIME_LIMIT", "TIME_LIMIT_90",
    "TIME_LIMIT_80", "TIME_LIMIT_50",  "ARRAY_TASKS"};

void check_sbatch_value(const Job& job, const std::string& key, const std::string& value) {
  if (auto problem = shell::sbatch_value_problem(value))
    reject(job, key,
           ddp::text::quote(key) + " " + *problem + "; it is written into an #SBATCH line");
}

void check_mail(const Job& job) {
  if (!job.mail) return;
  if (!job.mail->user.empty()) check_sbatch_value(job, "mail", job.mail->user);
  for (auto item : ddp::text::split(job.mail->type, ',')) {
    std::string upper(item);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (std::find(k_mail_types.begin(), k_mail_types.end(), upper) == k_mail_types.end())
      reject(job, "mail",
             "\"mail.type\": unknown type " + ddp::text::quote(item) +
                 " (valid: comma-separated NONE, BEGIN, END, FAIL, REQUEUE, ALL, "
                 "TIME_LIMIT, TIME_LIMIT_90, ...; any case)");
  }
}

// What modules and activate may reference: they run before env is exported, so Slurm's job
// variables, the site's variables and a sweep's values only.
std::vector<std::string> early_reference_names(const Job& job, const Profile& profile) {
  std::vector<std::string> names = refs::slurm_job_variables();
  names.insert(names.end(), profile.variables.begin(), profile.variables.end());
  const auto sweep = sweep_variables(job);
  names.insert(names.end(), sweep.begin(), sweep.end());
  return names;
}

// The names a value of this job may reference: those, the job's env keys, and for launcher none
// what it exports in the batch shell.
std::vector<std::string> reference_names(const Job& job, const Profile& profile) {
  std::vector<std::string> names = early_reference_names(job, profile);
  for (const auto& [key, value] : job.env) names.push_back(key);
  if (job.launcher == Launcher::none) {
    const auto& more = refs::batch_launch_variables();
    names.insert(names.end(), more.begin(), more.end());
  }
  return names;
}

// Whether a task_prefix is a shell that runs a command string ([bash, -c, '...', name],
// [sh, -ec, ...]): its words are that shell's to expand, in the task.
bool shell_prefix(const std::vector<std::string>& prefix) {
  if (prefix.empty()) return false;
  const std::string& first = prefix.front();
  const std::string program = first.substr(first.rfind('/') + 1);
  if (program != "bash" && program != "sh" && program != "dash" && program != "zsh" &&
      program != "ksh")
    return false;
  for (std::size_t i = 1; i < prefix.size(); ++i) {
    const std::string& word = prefix[i];
    if (word.size() < 2 || word[0] != '-' || word[1] == '-') return false;
    if (word.find('c') != std::string::npos) return true;
  }
  return false;
}

// One value's references against the names it may use: an error for one that cannot expand, a
// warning for each "$NAME" that stays as written.
void check_value(const Job& job, const std::vector<std::string>& allowed, const std::string& key,
                 const std::string& shown, const std::string& value, std::vector<Error>& warnings) {
  if (auto problem = refs::problem(value, allowed, shown)) {
    for (const auto& name : refs::names(value))
      if (std::ranges::any_of(job.env, [&](const auto& e) { return e.first == name; }) &&
          !std::ranges::count(allowed, name))
        reject(job, key,
               ddp::text::quote(shown) + ": ${" + name +
                   "} is an env key, and env is exported after modules and activate run: "
                   "write its value here");
    reject(job, key, *problem);
  }
  for (const auto& name : refs::unbraced(value, allowed))
    warnings.push_back({ddp::text::quote(shown) + ": $" + name + " stays as written; write ${" +
                            name + "} for its value when the job runs",
                        job.at(key)});
  for (const auto& name : refs::unbraced_unknown(value, allowed)) {
    if (!refs::set_in_each_task(name)) {
      warnings.push_back({ddp::text::quote(shown) + ": $" + name +
                              " stays as written: the job knows no variable " + name +
                              " (a job's own go in env:, a site's in its profile's variables:)",
                          job.at(key)});
      continue;
    }
    // A shell of the prefix runs in each task, after the setup: there it reads RANK,
    // MASTER_ADDR and the rest, as task_prefix is meant to.
    if (key == "task_prefix" && shell_prefix(job.task_prefix)) continue;
    warnings.push_back({ddp::text::quote(shown) + ": $" + name + " stays as written: " + name +
                            " is set in each task only, never where ddpgen's values expand; a "
                            "shell in task_prefix reads it there ([bash, -c, 'exec \"$@\" "
                            "--arg=\"$" +
                            name + "\"', prefix])",
                        job.at(key)});
  }
}

// A warning for each value that starts with "~" where it stays as written: a word that is not
// a command's first, an env value, a file sbatch or the script names, the container's working
// directory. The paths ddpgen runs or creates (script, checkpoint.dir, logs.dir, the container's
// image and mounts, ...) turn a leading "~/" into ${HOME}/ instead.
void add_tilde_warnings(const Job& job, std::vector<Error>& warnings) {
  auto warn = [&](const std::string& key, const std::string& shown, const std::string& value) {
    if (value.starts_with("~"))
      warnings.push_back({ddp::text::quote(shown) +
                              ": the leading \"~\" stays as written (it is not the home "
                              "directory here); write ${HOME} for that",
                          job.at(key)});
  };
  auto warn_list = [&](const std::string& key, const std::string& shown,
                       const std::vector<std::string>& list, std::size_t from) {
    for (std::size_t i = from; i < list.size(); ++i)
      warn(key, shown + "[" + std::to_string(i) + "]", list[i]);
  };
  warn_list("args", "args", job.args, 0);
  warn_list("python", "python", job.python, 1);
  warn_list("task_prefix", "task_prefix", job.task_prefix, 1);
  warn_list("torchrun", "torchrun.command", job.torchrun_command, 1);
  warn_list("torchrun", "torchrun.options", job.torchrun_options, 0);
  warn_list("accelerate", "accelerate.options", job.accelerate_options, 0);
  warn_list("modules", "modules", job.modules, 0);
  for (const auto& [key, value] : job.env) warn("env", "env." + key, value);
  warn("output", "output", job.output);
  warn("error", "error", job.error);
  if (job.container) warn("container", "container.workdir", job.container->workdir);
}

std::vector<Error> check_references(const Job& job, const Profile& profile) {
  const auto names = reference_names(job, profile);
  const auto early = early_reference_names(job, profile);
  std::vector<Error> warnings;
  auto check = [&](const std::string& key, const std::string& shown, const std::string& value) {
    check_value(job, names, key, shown, value, warnings);
  };
  auto check_list = [&](const std::string& key, const std::vector<std::string>& list) {
    for (std::size_t i = 0; i < list.size(); ++i)
      check(key, key + "[" + std::to_string(i) + "]", list[i]);
  };
  check_list("args", job.args);
  // The command's words: the srun line and the wrapper expand them in the batch shell, after
  // env is exported.
  check("script", "script", job.script);
  check_list("python", job.python);
  check_list("task_prefix", job.task_prefix);
  check_list("srun", job.srun);
  if (!job.accelerate_config.empty())
    check("accelerate", "accelerate.config_file", job.accelerate_config);
  for (std::size_t i = 0; i < job.accelerate_options.size(); ++i)
    check("accelerate", "accelerate.options[" + std::to_string(i) + "]", job.accelerate_options[i]);
  for (const auto& [field, list] :
       {std::pair{"command", &job.torchrun_command}, std::pair{"options", &job.torchrun_options}})
    for (std::size_t i = 0; i < list->size(); ++i)
      check("torchrun", std::string("torchrun.") + field + "[" + std::to_string(i) + "]",
            (*list)[i]);
  for (const auto& [key, value] : job.env) check("env", "env." + key, value);
  for (std::size_t i = 0; i < job.modules.size(); ++i)
    check_value(job, early, "modules", "modules[" + std::to_string(i) + "]", job.modules[i],
                warnings);
  if (job.activate) check_value(job, early, "activate", "activate", job.activate->value, warnings);
  if (job.checkpoint) check("checkpoint", "checkpoint.dir", job.checkpoint->dir);
  if (job.logs) check("logs", "logs.dir", job.logs->dir);
  if (job.container) {
    check("container", "container.image", job.container->image);
    check("container", "container.workdir", job.container->workdir);
    for (const auto& m : job.container->mounts) check("container", "container.mounts", m);
    // The profile's binds join the job's mounts, so they follow the same rule; an error names
    // the profile's line.
    const auto at = profile.origin.find("container.binds");
    for (const auto& bind : profile.container_binds)
      if (auto problem = refs::problem(bind, names, "container.binds"))
        throw Error{*problem, {at == profile.origin.end() ? profile.name : at->second, 0, 0}};
  }
  for (const auto& [key, value] : {std::pair{"output", job.output}, {"error", job.error}}) {
    // A name with the sweep's values (checked with the sweep's rules) is the script's to open;
    // sbatch gets one of the array task.
    std::string pattern;
    if (names_sweep(job, value))
      pattern = sbatch_file(job, value, std::string_view(key) == "error" ? ".err" : ".out");
    else if (auto problem = refs::filename_pattern(value, &pattern))
      reject(job, key, ddp::text::quote(std::string(key)) + ": " + *problem);
    if (!pattern.empty()) check_sbatch_value(job, key, pattern);
  }
  add_tilde_warnings(job, warnings);
  return warnings;
}

// Keys that only some launchers take.
void check_launcher_keys(const Job& job) {
  const Launcher l = job.launcher;
  if ((!job.accelerate_config.empty() || !job.accelerate_options.empty()) &&
      l != Launcher::accelerate)
    reject(job, "accelerate", "\"accelerate\" is for launcher accelerate");
  if ((!job.torchrun_command.empty() || !job.torchrun_options.empty()) && l != Launcher::torchrun)
    reject(job, "torchrun", "\"torchrun\" is for launcher torchrun");
  if (!job.torchrun_command.empty() && !job.python.empty())
    reject(job, "python",
           "\"python\" and \"torchrun.command\" both say how the launcher starts: put the "
           "interpreter in torchrun.command, as in [python3, -u, -m, torch.distributed.launch]");
  if (!job.python.empty() && (l == Launcher::accelerate || l == Launcher::fairseq))
    reject(job, "python",
           std::string("\"python\" is not used by launcher ") + launcher_name(l) +
               " (it runs the script with its own program); torchrun, srun, lightning and none "
               "use it");
  if (l == Launcher::lightning && (job.name == "bash" || job.name == "interactive"))
    reject(job, "name",
           "launcher lightning: a job named " + ddp::text::quote(job.name) +
               " makes Lightning treat it as interactive and ignore Slurm; choose another name");
  if (l != Launcher::none) return;
  // Said before heal and watchdog, which spares needs and launcher none refuses (heal needs
  // watchdog): the job would otherwise be sent from one of those refusals to the next.
  if (job.spares > 0)
    reject(job, "spares",
           "\"spares\": a spare replaces a node of the srun training step, and launcher none "
           "runs no srun step; drop \"spares\", or choose a launcher that runs one (srun, "
           "torchrun, accelerate, lightning, fairseq)");
  if (job.heal)
    reject(job, "heal",
           "\"heal\": ddp-watch names the faulty nodes of an srun step, and launcher none runs "
           "no srun step; drop \"heal\", or choose a launcher that runs one");
  if (!job.srun.empty())
    reject(job, "srun", "launcher none runs no training step: \"srun\" has nothing to apply to");
  if (job.container)
    reject(job, "container",
           "launcher none runs the program in the batch shell, not in a container step; start "
           "the container from the program's own launcher");
  if (job.watchdog)
    reject(job, "watchdog", "launcher none: ddp-watch watches an srun step, and there is none");
}

// heal: ddp-watch names the nodes and requeues; nothing else may requeue the same failure.
void check_heal(const Job& job) {
  if (!job.heal) return;
  if (!job.watchdog)
    reject(job, "heal",
           "\"heal\" needs \"watchdog\" (e.g. watchdog: {timeout: 10m}): ddp-watch runs the "
           "training step, names the faulty nodes and requeues the job without them");
  if (job.watchdog->requeue)
    reject(job, "heal",
           "\"heal\" requeues a stalled job itself, without the node that hung: drop "
           "\"watchdog.on_stall: requeue\"");
  if (job.checkpoint && job.checkpoint->requeue_on_failure)
    reject(job, "heal",
           "\"heal\" requeues a failed job itself, without the nodes it names: drop "
           "\"checkpoint.requeue_on_failure\"");
  // One counter, SLURM_RESTART_COUNT, counts every requeue of the job whatever caused it, and
  // both caps compare with it: heal's can only be the lower one.
  if (job.checkpoint && job.heal->max_requeues > job.checkpoint->max_restarts)
    reject(job, "heal",
           "\"heal.max_requeues\" (" + std::to_string(job.heal->max_requeues) +
               ") is above \"checkpoint.max_restarts\" (" +
               std::to_string(job.checkpoint->max_restarts) +
               "): both cap the job's restarts (SLURM_RESTART_COUNT, whatever caused them); "
               "lower heal.max_requeues or raise checkpoint.max_restarts");
}

// A first word such as "OMP_NUM_THREADS=4" is a variable assignment to bash, not a program:
// where the word starts a command (launcher none), bash would set the variable and run the
// next word instead.
void check_first_words(const Job& job) {
  auto assignment = [](const std::string& word) {
    const auto eq = word.find('=');
    return eq != std::string::npos && ddp::is_env_name(word.substr(0, eq));
  };
  // key: the job key the error points at; shown: the value's name in the message.
  auto refuse = [&](const std::string& key, const std::string& shown, const std::string& word) {
    reject(job, key,
           ddp::text::quote(shown) + ": the first word " + ddp::text::quote(word) +
               " is a variable assignment, not a program; set the variable under \"env\"");
  };
  if (assignment(job.script)) refuse("script", "script", job.script);
  if (!job.task_prefix.empty() && assignment(job.task_prefix.front()))
    refuse("task_prefix", "task_prefix", job.task_prefix.front());
  if (!job.python.empty() && assignment(job.python.front()))
    refuse("python", "python", job.python.front());
  if (!job.torchrun_command.empty() && assignment(job.torchrun_command.front()))
    refuse("torchrun", "torchrun.command", job.torchrun_command.front());
}

// spares: the training step runs on some of the job's nodes, chosen by ddp-watch, which
// starts a new step on a spare when the heal path names a node.
void check_spares(const Job& job, std::vector<Error>& warnings) {
  if (job.spares == 0) {
    if (job.heal && job.heal->max_respawns)
      reject(job, "heal",
             "\"heal.max_respawns\" needs \"spares\" (e.g. spares: 1): a respawn replaces a "
             "named node by a spare node of the job");
    return;
  }
  if (!job.heal)
    reject(job, "spares",
           "\"spares\" needs \"heal\" (e.g. heal: {max_requeues: 2}): ddp-watch --heal names "
           "the node a spare replaces");
  // launcher none (no step to move) never gets here: check_launcher_keys refuses it.
  // A respawn never returns to a node named before (contrib/ddp-watch/respawn.cpp): each one
  // takes a spare for good, so respawns beyond the spares fall back to the heal path.
  if (job.heal->max_respawns && *job.heal->max_respawns > job.spares)
    warnings.push_back({"\"heal.max_respawns\" " + std::to_string(*job.heal->max_respawns) +
                            " > \"spares\" " + std::to_string(job.spares) +
                            ": each respawn replaces a named node by a spare for good, so at "
                            "most " +
                            ddp::text::plural(static_cast<std::uint64_t>(job.spares), "respawn") +
                            " can happen; then the heal path excludes and requeues",
                        job.at("heal")});
  // --nodefile names nodes as --nodelist does; srun refuses --relative beside the --nodelist
  // that ddp-watch adds.
  for (const std::string& option : job.srun) {
    for (std::string_view taken : {"--nodes", "--nodelist", "--nodefile", "--exclude", "--relative",
                                   "-N", "-w", "-F", "-x", "-r"}) {
      if (option == taken || option.starts_with(std::string(taken) + "=") ||
          (taken.size() == 2 && option.starts_with(taken)))
        reject(job, "srun",
               ddp::text::quote(option) +
                   ": with \"spares\", ddp-watch chooses the training step's nodes; drop it");
    }
  }
}

// heal excludes the nodes it names and requeues: a node list the job must have (sbatch's or
// srun's --nodelist, or an abbreviation Slurm reads as it) would keep the requeued job from
// ever starting, or its step from launching.
void check_heal_nodelist(const Job& job) {
  if (!job.heal || !job.heal->exclude) return;
  auto names_nodes = [](const std::string& option) {
    const std::string name = option.substr(0, option.find('='));
    const std::string_view full = "--nodelist";
    return name.size() >= 7 && full.starts_with(name);  // --nodel, Slurm's shortest unique
  };
  for (const char* key : {"sbatch", "srun"}) {
    const auto& options = std::string_view(key) == "sbatch" ? job.sbatch : job.srun;
    for (const std::string& option : options)
      if (names_nodes(option))
        reject(job, key,
               ddp::text::quote(option) +
                   ": with \"heal\", a node heal excludes may be one this list requires, and "
                   "the requeued job would never run; drop it (a node to avoid goes in "
                   "--exclude), or set \"heal.exclude: false\"");
  }
}

}  // namespace

void reject(const Job& job, const std::string& key, const std::string& message) {
  throw Error{message, job.at(key)};
}

std::vector<Error> check_job(const Job& job, const Profile& profile) {
  if (job.account.empty() && profile.account_required)
    reject(job, "account",
           "profile " + ddp::text::quote(profile.name) + " requires an account: add \"account: " +
               ddp::text::printable(profile.account_hint) +
               "\" to the job file or pass --set account=" +
               ddp::text::printable(profile.account_hint));
  for (const auto& [key, value] : {std::pair{"account", job.account},
                                   {"name", job.name},
                                   {"qos", job.qos},
                                   {"constraint", job.constraint}})
    if (!value.empty()) check_sbatch_value(job, key, value);
  auto warnings = check_references(job, profile);
  check_mail(job);
  check_launcher_keys(job);
  check_heal(job);
  check_first_words(job);
  // Lightning saves where its Trainer says and requeues itself: it needs no checkpoint.dir.
  if (job.checkpoint && job.checkpoint->dir.empty() && job.launcher != Launcher::lightning)
    reject(job, "checkpoint",
           "\"checkpoint.dir\" is required (the directory the program saves to and resumes "
           "from; only launcher lightning, which saves where its Trainer says, goes without)");
  check_spares(job, warnings);
  check_heal_nodelist(job);
  if (job.script.starts_with("-"))
    reject(job, "script", "\"script\" must not start with '-' (it would be read as an option)");
  if (job.container && job.container->image.starts_with("-"))
    reject(job, "container",
           "\"container.image\" must not start with '-' (it would be read as an option)");
  if (!job.task_prefix.empty() && job.task_prefix.front().starts_with("-"))
    reject(job, "task_prefix", "\"task_prefix\" must start with a program, not an option");
  if (job.watchdog && job.watchdog->requeue && !(job.checkpoint && job.checkpoint->requeue))
    reject(job, "watchdog",
           "\"watchdog.on_stall: requeue\" needs \"checkpoint.requeue: true\": the restart cap "
           "(checkpoint.max_restarts) and the requeue of this task alone come from there");
  if (job.checkpoint && job.time > 0 && job.checkpoint->signal_time >= job.time)
    reject(job, "checkpoint",
           "\"checkpoint.signal_time\" (" + std::to_string(job.checkpoint->signal_time) +
               " s) must be shorter than the time limit (" + duration::format(job.time) + ")");
  return warnings;
}

}  // namespace ddpgen::detail
