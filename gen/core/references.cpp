#include "gen/core/references.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

#include "gen/core/shell.hpp"
#include "libddp/util/rules.hpp"
#include "libddp/util/shell.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen::refs {
namespace {

// Variables that differ between tasks or exist only inside a step: in the batch shell, where
// a value expands, they would be the batch shell's (often unset), never each task's own.
const std::vector<std::string>& per_task_variables() {
  static const std::vector<std::string> names = {
      "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID",     "SLURM_STEP_ID", "SLURM_STEPID",
      "RANK",         "LOCAL_RANK",    "LOCAL_WORLD_SIZE", "GROUP_RANK",    "NODE_RANK",
      "WORLD_SIZE",   "MASTER_ADDR",   "MASTER_PORT",      "NNODES",        "SLURM_STEP_NODELIST"};
  return names;
}

// sbatch's filename patterns for the references that have one (man sbatch, "filename pattern").
constexpr std::pair<std::string_view, std::string_view> k_patterns[] = {
    {"SLURM_JOB_ID", "%j"},        {"SLURM_JOBID", "%j"},    {"SLURM_ARRAY_JOB_ID", "%A"},
    {"SLURM_ARRAY_TASK_ID", "%a"}, {"SLURM_JOB_NAME", "%x"}, {"USER", "%u"},
    {"SLURM_JOB_USER", "%u"},
};

// A reference at text[at]: "${NAME}", or "${NAME:-TEXT}" (the variable when it is set and not
// empty, else TEXT, which runs to the first '}').
struct Ref {
  std::size_t end = 0;
  std::string_view name;
  std::optional<std::string_view> fallback;
};

std::optional<Ref> ref_at(std::string_view text, std::size_t at) {
  if (text.substr(at, 2) != "${") return std::nullopt;
  const auto close = text.find('}', at + 2);
  if (close == std::string_view::npos) return std::nullopt;
  const std::string_view inside = text.substr(at + 2, close - at - 2);
  const auto sep = inside.find(":-");
  Ref r{close + 1, inside.substr(0, sep), std::nullopt};
  if (!ddp::is_env_name(r.name)) return std::nullopt;
  if (sep != std::string_view::npos) r.fallback = inside.substr(sep + 2);
  return r;
}

// The end of the reference at text[at], or at when there is none there.
std::size_t reference_end(std::string_view text, std::size_t at) {
  const auto r = ref_at(text, at);
  return r ? r->end : at;
}

// A default bash takes literally inside double quotes.
bool plain_default(std::string_view text) {
  return std::ranges::all_of(text, [](char c) { return ddp::shell::is_bare_safe(c) || c == ' '; });
}

// "$${" writes a literal "${" (Hydra's and OmegaConf's ${key}): no reference starts there.
std::vector<Ref> refs_of(std::string_view text) {
  std::vector<Ref> out;
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text.substr(i, 3) == "$${")
      ++i;
    else if (auto r = ref_at(text, i)) {
      out.push_back(*r);
      i = r->end - 1;
    }
  return out;
}

bool contains(const std::vector<std::string>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

// "RDZV_BACKEND" -> "rdzv-backend": torchrun's option for its PET_ variable.
std::string lower_dashed(std::string_view name) {
  std::string out;
  for (char c : name)
    out += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

const std::vector<std::string>& slurm_job_variables() {
  static const std::vector<std::string> names = {
      "SLURM_JOB_ID",
      "SLURM_JOBID",
      "SLURM_JOB_NAME",
      "SLURM_JOB_USER",
      "SLURM_JOB_ACCOUNT",
      "SLURM_JOB_PARTITION",
      "SLURM_JOB_QOS",
      "SLURM_JOB_NODELIST",
      "SLURM_JOB_NUM_NODES",
      "SLURM_NNODES",
      "SLURM_NTASKS",
      "SLURM_NTASKS_PER_NODE",
      "SLURM_CPUS_PER_TASK",
      "SLURM_GPUS_ON_NODE",
      "SLURM_ARRAY_JOB_ID",
      "SLURM_ARRAY_TASK_ID",
      "SLURM_ARRAY_TASK_COUNT",
      "SLURM_ARRAY_TASK_MIN",
      "SLURM_ARRAY_TASK_MAX",
      "SLURM_SUBMIT_DIR",
      "SLURM_SUBMIT_HOST",
      "SLURM_CLUSTER_NAME",
      "SLURM_RESTART_COUNT",
      "SLURM_TASKS_PER_NODE",
      "SLURM_JOB_CPUS_PER_NODE",
      "SLURMD_NODENAME",
      "USER",
      "HOME",
  };
  return names;
}

const std::vector<std::string>& batch_launch_variables() {
  static const std::vector<std::string> names = {"MASTER_ADDR", "MASTER_PORT",    "NNODES",
                                                 "WORLD_SIZE",  "NPROC_PER_NODE", "DDP_HOSTS",
                                                 "DDP_HOSTFILE"};
  return names;
}

std::string sweep_variable(std::string_view parameter) {
  std::string out = "SWEEP_";
  for (char c : parameter) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::optional<std::string> reserved(std::string_view name) {
  static const std::vector<std::string> rendezvous = {"RANK",
                                                      "LOCAL_RANK",
                                                      "WORLD_SIZE",
                                                      "LOCAL_WORLD_SIZE",
                                                      "NNODES",
                                                      "NODE_RANK",
                                                      "GROUP_RANK",
                                                      "NPROC_PER_NODE",
                                                      "PET_NNODES",
                                                      "PET_NODE_RANK",
                                                      "PET_NPROC_PER_NODE",
                                                      "PET_MASTER_ADDR",
                                                      "PET_MASTER_PORT",
                                                      "DDP_HOSTS"};
  static const std::vector<std::string> script = {"DDP_HOSTFILE", "DDP_CHECKPOINT_DIR",
                                                  "DDP_REQUEUE_NOTICE", "DDP_TRAIN_STATUS"};
  // torchrun reads PET_<OPTION> as its --<option>: these are the rendezvous options ddpgen
  // refuses in torchrun.options, since the address and port it exports make the rendezvous.
  static const std::vector<std::string> torchrun = {"PET_STANDALONE", "PET_RDZV_BACKEND",
                                                    "PET_RDZV_ENDPOINT", "PET_RDZV_ID"};
  static const std::vector<std::string> bash = {
      "IFS",    "SECONDS",    "BASH_ENV", "ENV",           "SHELLOPTS",      "BASHOPTS",
      "CDPATH", "GLOBIGNORE", "PS4",      "BASH_XTRACEFD", "POSIXLY_CORRECT"};
  const std::string n(name);
  if (n == "MASTER_PORT")
    return "MASTER_PORT is set for every task by the generated script (or srun --ddp); to "
           "choose the port, set DDP_MASTER_PORT";
  if (n == "MASTER_ADDR")
    return "MASTER_ADDR is set for every task by the generated script (or srun --ddp) to the "
           "first node of the step; it cannot be chosen";
  if (contains(rendezvous, n))
    return n +
           " is set for every task by the generated script (or srun --ddp) from nodes and "
           "procs_per_node";
  if (n == "DDP_RESPAWN_COUNT")
    return n +
           " is set by ddp-watch in a step it starts again on a spare (spares); the "
           "job's first step has none";
  if (contains(torchrun, n))
    return n + " is torchrun's --" + lower_dashed(n.substr(4)) +
           ", and ddpgen makes the rendezvous itself (the job's first node, MASTER_PORT); to "
           "choose the port, set DDP_MASTER_PORT";
  if (n == "DDP_LOG_DIR")
    return "DDP_LOG_DIR is the generated script's own variable, the rank logs' directory; set "
           "\"logs.dir\" instead";
  // srun and sbatch read it as --export: a list without ALL would start the training step
  // without the environment the script sets.
  if (n == "SLURM_EXPORT_ENV")
    return "SLURM_EXPORT_ENV is srun's --export, and the training step must get the environment "
           "the script sets; set each variable under \"env\" instead";
  if (contains(script, n) || n.starts_with("ddpgen_"))
    return n + " is the generated script's own variable";
  if (contains(slurm_job_variables(), n) || n.starts_with("SLURM_STEP_") || n == "SLURM_PROCID" ||
      n == "SLURM_LOCALID" || n == "SLURM_NODEID" || n == "SLURM_NODELIST")
    if (n != "USER" && n != "HOME")
      return n + " is set by Slurm for the job, and the generated script relies on it";
  if (contains(bash, n)) return n + " changes how bash runs the generated script";
  return std::nullopt;
}

std::string home_tilde(std::string_view path) {
  if (path == "~" || path.starts_with("~/")) return "${HOME}" + std::string(path.substr(1));
  return std::string(path);
}

std::size_t expanding_end(std::string_view text, std::size_t at) {
  if (text.substr(at, 3) == "$${") return at;
  const auto r = ref_at(text, at);
  return r && (!r->fallback || plain_default(*r->fallback)) ? r->end : at;
}

std::vector<std::string> names(std::string_view text) {
  std::vector<std::string> out;
  for (const Ref& r : refs_of(text)) out.emplace_back(r.name);
  return out;
}

std::optional<std::string> problem(std::string_view text, const std::vector<std::string>& allowed,
                                   const std::string& key) {
  for (const Ref& r : refs_of(text)) {
    const std::string name(r.name);
    const std::string head = ddp::text::quote(key) + ": ${" + name + (r.fallback ? ":-" : "") +
                             std::string(r.fallback.value_or("")) + "} ";
    const bool known = contains(allowed, name);
    if (!known && contains(per_task_variables(), name))
      return head + "differs per task, and values expand once, in the batch shell: read " + name +
             " in the program instead";
    // ${NAME:-TEXT}: any variable of the job's environment (sbatch exports the submitting
    // shell's), else TEXT, which stays plain text.
    if (r.fallback) {
      if (!plain_default(*r.fallback))
        return head + "has a default with other characters than letters, digits, spaces and " +
               "_ - . / : = , + @ %; put other text outside the braces";
      continue;
    }
    if (known) continue;
    std::string message = head + "is not a variable this job can rely on";
    const std::string close = ddp::text::did_you_mean(name, allowed);
    if (!close.empty()) message += " (did you mean ${" + close + "}?)";
    return message + "; names that expand: Slurm's job variables (SLURM_JOB_ID, " +
           "SLURM_ARRAY_TASK_ID, SLURM_SUBMIT_DIR, ...), USER, HOME, the job's env keys and " +
           "the profile's variables; ${" + name + ":-DEFAULT} takes " + name +
           " from the job's environment (sbatch exports the submitting shell's), else DEFAULT; "
           "$${" +
           name + "} is a literal ${" + name + "} (Hydra, OmegaConf)";
  }
  return std::nullopt;
}

namespace {

// The names text writes as "$NAME" without braces, known to allowed or not (`known`).
std::vector<std::string> dollar_names(std::string_view text,
                                      const std::vector<std::string>& allowed, bool known) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] != '$') continue;
    std::size_t end = i + 1;
    while (end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'))
      ++end;
    const std::string name(text.substr(i + 1, end - i - 1));
    if (ddp::is_env_name(name) && contains(allowed, name) == known) out.push_back(name);
    i = end - 1;
  }
  return out;
}

}  // namespace

std::vector<std::string> unbraced(std::string_view text, const std::vector<std::string>& allowed) {
  return dollar_names(text, allowed, true);
}

std::vector<std::string> unbraced_unknown(std::string_view text,
                                          const std::vector<std::string>& allowed) {
  return dollar_names(text, allowed, false);
}

bool set_in_each_task(std::string_view name) {
  return std::ranges::find(per_task_variables(), name) != per_task_variables().end();
}

std::optional<std::string> filename_pattern(std::string_view text, std::string* out) {
  out->clear();
  for (std::size_t i = 0; i < text.size(); ++i) {
    const std::size_t end = reference_end(text, i);
    if (end == i) {
      *out += text[i];
      continue;
    }
    const auto name = text.substr(i + 2, end - i - 3);
    const auto* found = std::find_if(std::begin(k_patterns), std::end(k_patterns),
                                     [&](const auto& p) { return p.first == name; });
    if (found == std::end(k_patterns))
      return "${" + std::string(name) +
             "} cannot expand in an #SBATCH line (sbatch reads it before any shell runs); " +
             "these can: ${SLURM_JOB_ID} (%j), ${SLURM_ARRAY_JOB_ID} (%A), " +
             "${SLURM_ARRAY_TASK_ID} (%a), ${SLURM_JOB_NAME} (%x), ${USER} (%u)";
    *out += found->second;
    i = end - 1;
  }
  return std::nullopt;
}

std::optional<std::string> script_filename(std::string_view text,
                                           const std::vector<std::string>& also, std::string* out) {
  out->clear();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (const std::size_t end = reference_end(text, i); end > i) {
      const auto name = text.substr(i + 2, end - i - 3);
      const bool pattern =
          std::ranges::any_of(k_patterns, [&](const auto& p) { return p.first == name; });
      if (!pattern && std::ranges::find(also, name) == also.end())
        return "${" + std::string(name) +
               "} cannot name the file; these can: the sweep's ${SWEEP_<NAME>}, ${SLURM_JOB_ID} "
               "(%j), ${SLURM_ARRAY_JOB_ID} (%A), ${SLURM_ARRAY_TASK_ID} (%a), ${SLURM_JOB_NAME} "
               "(%x), ${USER} (%u)";
      out->append(text.substr(i, end - i));
      i = end - 1;
      continue;
    }
    if (text[i] != '%') {
      *out += text[i];
      continue;
    }
    const char p = i + 1 < text.size() ? text[i + 1] : '\0';
    const auto* found = std::find_if(std::begin(k_patterns), std::end(k_patterns),
                                     [&](const auto& k) { return k.second[1] == p; });
    if (p == '%') {
      *out += '%';
    } else if (found != std::end(k_patterns)) {
      *out += "${" + std::string(found->first) + "}";
    } else {
      return "\"" + std::string(text.substr(i, 2)) +
             "\" cannot name a file the script opens itself (a sweep's); these can: %j, %A, "
             "%a, %x, %u and %%";
    }
    ++i;
  }
  return std::nullopt;
}

}  // namespace ddpgen::refs
