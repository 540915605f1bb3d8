#include "gen/core/options.hpp"

#include <algorithm>
#include <cctype>
#include <span>
#include <utility>

#include "gen/core/shell.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen::options {
namespace {

// An option ddpgen computes, the job key that sets it and, for a profile, where the site says it.
struct Owned {
  std::string_view option;
  std::string_view job_key;
  std::string_view profile_key;  // empty: a profile has no say (it is the job's)
};

constexpr Owned k_sbatch[] = {
    {"--job-name", "name", ""},
    {"--account", "account", "account.required"},
    {"--partition", "partition", "partitions[].name"},
    {"--qos", "qos", "partitions[].qos"},
    {"--constraint", "constraint", "partitions[].constraint"},
    {"--nodes", "nodes", ""},
    {"--ntasks", "procs_per_node", ""},
    {"--ntasks-per-node", "procs_per_node", ""},
    {"--ntasks-per-gpu", "procs_per_node", ""},
    {"--cpus-per-task", "cpus_per_task", "cpus_per_gpu"},
    {"--gpus", "gpus_per_node", "node.gpus"},
    {"--gpus-per-node", "gpus_per_node", "node.gpus"},
    {"--gpus-per-task", "gpus_per_node", "node.gpus"},
    {"--time", "time", "partitions[].max_time"},
    {"--output", "output", ""},
    {"--error", "error", ""},
    {"--mail-user", "mail.user", ""},
    {"--mail-type", "mail.type", ""},
    {"--wrap", "script", ""},
    {"--ddp", "", "ddp_plugin"},
};

constexpr Owned k_srun[] = {
    {"--nodes", "nodes", ""},
    {"--ntasks", "procs_per_node", ""},
    {"--ntasks-per-node", "procs_per_node", ""},
    {"--cpus-per-task", "cpus_per_task", "cpus_per_gpu"},
    {"--gpus", "gpus_per_node", ""},
    {"--gpus-per-node", "gpus_per_node", ""},
    {"--gpus-per-task", "gpus_per_node", ""},
    {"--gres", "gpus_per_node", ""},
    {"--ddp", "", "ddp_plugin"},
    {"--container-image", "container.image", ""},
    {"--container-mounts", "container.mounts", ""},
    {"--container-workdir", "container.workdir", ""},
    {"--environment", "container (runtime: edf)", ""},
    {"--kill-on-bad-exit", "", ""},
};

// Real options that are the start of an option ddpgen computes: not abbreviations.
const std::vector<std::string_view> k_real_prefixes = {"--container", "--gpus", "--ntasks"};

// The option Slurm reads for an alias of it.
std::optional<std::string> alias(std::string_view opt) {
  if (opt == "--tasks-per-node") return "--ntasks-per-node";
  return std::nullopt;
}

// Options whose value ddpgen checks, each with its shortest abbreviation: a shorter one is
// also another option's (--cpus-per-task, --tres-bind, --exclude), which Slurm refuses as
// ambiguous. A longer one Slurm reads as the option; refusing a bad value of one that Slurm
// also finds ambiguous (--gre, beside --gres-flags) costs nothing.
constexpr std::pair<std::string_view, std::string_view> k_checked[] = {
    {"--export", "--exp"},
    {"--cpus-per-gpu", "--cpus-per-g"},
    {"--tres-per-task", "--tres-p"},
    {"--gres", "--gre"},
};

// The checked option opt names, written in full or abbreviated; opt itself for any other.
std::string_view checked_name(std::string_view opt) {
  for (const auto& [full, shortest] : k_checked)
    if (opt.size() >= shortest.size() && full.starts_with(opt)) return full;
  return opt;
}

// Why value cannot follow the checked option opt, or nothing.
std::optional<std::string> value_problem(std::string_view opt, std::string_view value, bool srun) {
  if (opt == "--cpus-per-gpu")
    return srun ? std::string("the step's CPUs come from \"cpus_per_task\" (ddpgen's ") +
                      "--cpus-per-task, which srun refuses beside it); set that instead"
                : std::string("sbatch refuses it with ddpgen's --cpus-per-task; the ") +
                      "profile's \"cpus_per_gpu\" says it";
  // --export=NONE, =NIL or a list of names passes the step only those variables: the script's
  // own environment is lost. ALL first keeps it (--export=ALL,NAME=value).
  if (opt == "--export") {
    std::string first(value.substr(0, value.find(',')));
    for (char& c : first) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (first != "ALL")
      return std::string("the training step would start without the environment the ") +
             "script sets (the job's and the site's env, the software); leave --export out";
  }
  if (opt == "--tres-per-task" && value.find("gpu") != std::string_view::npos)
    return std::string("ddpgen computes the GPUs: set \"gpus_per_node\"");
  if (opt == "--gres" && gres_has_gpu(value))
    return std::string("ddpgen computes the GPUs of --gres: set \"gpus_per_node\" (and ") +
           "\"gpu_type\"); other generic resources (nvme:100) are added to ddpgen's --gres";
  return std::nullopt;
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

// The advice for an option ddpgen computes.
std::string owned_advice(const Owned& o, Source source) {
  const std::string opt(o.option);
  if (opt == "--kill-on-bad-exit")
    return "ddpgen always passes --kill-on-bad-exit=1, so that one failed rank ends the step";
  const std::string computed = "ddpgen computes " + opt;
  // A site's GPUs per task or per job: ddpgen asks for GPUs per node, and "node.gpus" is what
  // a node has, so pointing there would change the job rather than say it.
  if (source == Source::profile_sbatch && (opt == "--gpus-per-task" || opt == "--gpus"))
    return "ddpgen requests the job's GPUs per node (\"gpu_request\": gres or gpus-per-node) and "
           "each process picks its own by LOCAL_RANK; leave " + opt + " out";
  if (source == Source::profile_sbatch) {
    if (!o.profile_key.empty())
      return computed + ": set " + ddp::text::quote(std::string(o.profile_key));
    return computed + " from the job's " + ddp::text::quote(std::string(o.job_key)) +
           ", which a profile cannot set";
  }
  if (o.job_key.empty())
    return computed + " from the profile's " + ddp::text::quote(std::string(o.profile_key)) +
           ", which a job cannot set";
  return computed + ": set the job key " + ddp::text::quote(std::string(o.job_key)) + " instead";
}

}  // namespace

std::string name(std::string_view token) {
  return std::string(token.substr(0, token.find('=')));
}

bool gres_has_gpu(std::string_view value) {
  for (auto item : ddp::text::split(value, ',')) {
    const auto type = item.substr(0, item.find(':'));
    if (type == "gpu" || type == "gres/gpu") return true;
  }
  return false;
}

std::optional<std::string> problem(std::string_view token, Source source) {
  const std::string opt = name(token);
  bool well_formed = opt.size() > 2 && opt.starts_with("--");
  for (char c : std::string_view(opt).substr(std::min<std::size_t>(2, opt.size())))
    well_formed = well_formed && is_name_char(c);
  if (!well_formed)
    return std::string("is not one --option[=value] token (write a short option in its long ") +
           "form: --label for -l, --nodes for -N)";
  if (source != Source::job_srun)
    if (auto p = shell::sbatch_value_problem(token)) return "cannot be an #SBATCH line: it " + *p;
  const std::string lead = ": ";
  const bool srun = source == Source::job_srun;
  const auto owned = srun ? std::span<const Owned>(k_srun) : std::span<const Owned>(k_sbatch);
  for (const Owned& o : owned) {
    if (opt != o.option) continue;
    if (srun && token == "--kill-on-bad-exit=1") return std::nullopt;
    return lead + owned_advice(o, source);
  }
  // Slurm reads a unique abbreviation (--partit) and some aliases as the full option.
  if (auto full = alias(opt))
    for (const Owned& o : owned)
      if (o.option == *full) return ": Slurm reads it as " + *full + "; " + owned_advice(o, source);
  if (std::find(k_real_prefixes.begin(), k_real_prefixes.end(), opt) == k_real_prefixes.end()) {
    std::vector<std::string> longer;
    for (const Owned& o : owned)
      if (o.option.starts_with(opt)) longer.emplace_back(o.option);
    if (longer.size() == 1)
      for (const Owned& o : owned)
        if (o.option == longer.front())
          return ": Slurm reads this abbreviation as " + longer.front() + "; " +
                 owned_advice(o, source);
    if (longer.size() > 1)
      return ": an abbreviation Slurm may read as one of " + ddp::text::join(longer, ", ") +
             ", which ddpgen computes; write the option in full";
  }
  const std::string_view value = token.substr(std::min(token.size(), opt.size() + 1));
  const std::string_view full = checked_name(opt);
  if (auto why = value_problem(full, value, srun))
    return (full == opt ? ": " : ": an abbreviation of " + std::string(full) + ": ") + *why;
  return std::nullopt;
}

namespace {

// The hint for two items that may be one option: lead, then the advice with the joined token
// when the option check accepts it, else why that token would be refused too (a hint must
// itself be accepted).
std::string joined_hint(const std::string& lead, const std::string& advice,
                        const std::string& joined, Source source) {
  const auto why = problem(joined, source);
  if (!why) return lead + advice + ", as in " + ddp::text::quote(joined);
  return lead + "; joined into one item, " + ddp::text::quote(joined) +
         (why->starts_with(":") ? "" : " ") + *why;
}

}  // namespace

std::vector<std::string> decode(const StrictReader& r, const YAML::Node& node,
                                const std::string& path, Source source) {
  auto list = r.strings(node, path);
  auto refuse = [&](std::size_t i, const std::string& why) {
    r.reject(node[i], path,
             ddp::text::quote(path) + ": " + ddp::text::quote(list[i]) +
                 (why.starts_with(":") ? "" : " ") + why);
  };
  // "[--cpu-bind, none]": an option and its value as two items, which must be one
  // ("--cpu-bind=none"). "[--gres=gpu:4,nvme:100]" is two items to YAML, the second without
  // "--". Said first, since the first half may be wrong on its own too.
  for (std::size_t i = 1; i < list.size(); ++i) {
    if (list[i].starts_with("-")) continue;
    const std::string& before = list[i - 1];
    if (before.starts_with("--") && before.find('=') == std::string::npos)
      refuse(i, joined_hint("is not an option: an option and its value are one item", "",
                            before + "=" + list[i], source));
    if (node.Style() == YAML::EmitterStyle::Flow)
      refuse(i, joined_hint("is not an option: in a [...] list a comma separates items",
                            "; quote an option that holds one", before + "," + list[i], source));
  }
  for (std::size_t i = 0; i < list.size(); ++i)
    if (auto why = problem(list[i], source)) refuse(i, *why);
  return list;
}

}  // namespace ddpgen::options
