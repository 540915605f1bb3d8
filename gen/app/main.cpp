// ddpgen's command line: gathers inputs, calls the core, reports. Errors are thrown as one
// type and caught once, here.
#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "gen/app/commands.hpp"
#include "gen/app/files.hpp"
#include "gen/app/paths.hpp"
#include "gen/app/profile_store.hpp"
#include "gen/app/slurm_jobs.hpp"
#include "gen/core/job.hpp"
#include "gen/core/job_status.hpp"
#include "gen/core/plan.hpp"
#include "gen/core/profile_show.hpp"
#include "gen/core/render.hpp"
#include "gen/core/shell.hpp"
#include "libddp/util/text.hpp"

namespace {

using namespace ddpgen;

constexpr const char* k_template = "sbatch.sh.mustache";
constexpr const char* k_task_setup = "task-setup.sh";

// Above the core a failure ends the run: it is thrown as the ddp::Error it is and main()
// prints it once as "ddpgen: error: FILE:LINE:COL: ...".
template <typename T>
T unwrap(Result<T> result) {
  if (!result) throw result.error();
  if constexpr (!std::is_void_v<T>) return std::move(*result);
}

struct Inputs {
  std::string profile;
  std::string job_file;
  std::vector<std::string> sets;
};

// Adds --profile, the job file and --set to cmd. Options and the job file may come in any
// order: --set takes exactly one KEY=VALUE, so it never swallows the job file.
void add_job_options(CLI::App* cmd, Inputs& in) {
  cmd->add_option("--profile", in.profile, "site profile: NAME or PATH")->type_name("NAME|PATH");
  cmd->add_option("job", in.job_file, "job file (YAML)")->type_name("JOB.yaml");
  cmd->add_option("--set", in.sets, "override a job key: KEY=VALUE (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false)
      ->check(CLI::Validator(
          [](const std::string& set) {
            const auto eq = set.find('=');
            return eq == std::string::npos || eq == 0
                       ? "expected KEY=VALUE, e.g. --set partition=gpu; got " +
                             ddp::text::quote(set)
                       : std::string();
          },
          ""));
}

// The job options a render needs, or a message naming what is missing.
std::string missing_job_input(const Inputs& in) {
  if (in.profile.empty())
    return "--profile NAME|PATH is required (\"ddpgen profiles\" lists the profiles)";
  if (in.job_file.empty()) return "no job file: give one, e.g. ddpgen --profile NAME job.yaml";
  return "";
}

// Decodes and checks everything; returns the rendered script. Nothing is written.
std::string render_job(const Inputs& in) {
  const auto dirs = app::profile_dirs();
  const Profile profile = unwrap(app::load_profile(in.profile, dirs));
  const Job job = unwrap(decode_job(unwrap(app::read_file(in.job_file)), in.job_file, in.sets));
  const Plan p = unwrap(plan(job, profile));
  const std::string template_path = app::template_dir() + "/" + k_template;
  const std::string setup_path = app::template_dir() + "/" + k_task_setup;
  std::string script = unwrap(
      render(p, {DDPGEN_VERSION, in.job_file, template_path, unwrap(app::read_file(template_path)),
                 setup_path, unwrap(app::read_file(setup_path))}));
  // Said after the checks so that an error is the last line a user sees.
  for (const auto& warning : p.warnings)
    std::cerr << "ddpgen: warning: " << warning.to_string() << "\n";
  if (!profile.deprecated.empty())
    std::cerr << "ddpgen: warning: profile " << ddp::text::quote(profile.name)
              << " is deprecated: " << ddp::text::printable(profile.deprecated) << "\n";
  return script;
}

void list_profiles() {
  for (const auto& file : app::list_profiles(app::profile_dirs())) {
    auto profile = app::load_profile(file.path, {});
    if (!profile) {
      std::cout << ddp::text::printable(file.name) << "  (broken: " << profile.error().to_string()
                << ")\n";
      continue;
    }
    if (profile->abstract) continue;
    std::cout << ddp::text::printable(file.name)
              << std::string(file.name.size() < 20 ? 20 - file.name.size() : 1, ' ')
              << ddp::text::printable(
                     profile->description.substr(0, profile->description.find('\n')))
              << (profile->deprecated.empty() ? "" : " [deprecated]") << "\n";
  }
}

// The effective profile, each value with the file and line that set it.
void show_profile(const std::string& name) {
  std::vector<app::ProfileFile> chain;
  const Profile profile = unwrap(app::load_profile(name, app::profile_dirs(), &chain));
  std::vector<std::string> files;
  for (const auto& file : chain) files.push_back(file.path);
  unwrap(app::write_stdout(ddpgen::show_profile(profile, files)));
}

// What the command line asked for, filled in by CLI11.
struct Command {
  Inputs in, vin;
  std::string output, show_name, init_name = "mysite", init_output, schema_kind;
  bool schema_keys = false, live = false;
  CLI::App *profiles = nullptr, *show = nullptr, *init = nullptr, *schema = nullptr,
           *validate = nullptr;
  // submit, status, logs: a job on the cluster.
  Inputs sin;
  app::SubmitOptions submit_options;
  bool no_live = false, follow = false;
  std::string job_id;
  long rank = -1;  // logs --rank R; -1: the output file
  CLI::App *submit = nullptr, *status = nullptr, *logs = nullptr;
};

// submit JOB.yaml, status JOBID, logs JOBID [--follow].
void define_job_commands(CLI::App& cli, Command& c) {
  c.submit =
      cli.add_subcommand("submit", "render, check, write the script and submit it with sbatch");
  add_job_options(c.submit, c.sin);
  c.submit
      ->add_option("-o,--output", c.submit_options.output,
                   "write the script here (default: beside the job file, as NAME.slurm)")
      ->type_name("FILE");
  c.submit->add_flag("--follow", c.submit_options.follow,
                     "follow the job to its end, as ddpgen logs JOBID --follow does");
  c.submit->add_flag("--parsable", c.submit_options.parsable, "print the job id alone on stdout");
  c.submit->add_flag("--no-live", c.no_live,
                     "skip comparing the profile with the cluster (validate --live) first");
  c.status = cli.add_subcommand("status", "print a job's state, nodes, restarts and last verdict");
  c.status->add_option("jobid", c.job_id, "the job id sbatch printed")
      ->type_name("JOBID")
      ->required();
  c.logs = cli.add_subcommand("logs", "print a job's output file, or follow the job to its end");
  c.logs->add_option("jobid", c.job_id, "the job id sbatch printed")
      ->type_name("JOBID")
      ->required();
  c.logs->add_flag(
      "-f,--follow", c.follow,
      "stream state changes, output and verdicts until the job ends (Ctrl-C detaches)");
  c.logs
      ->add_option("--rank", c.rank,
                   "print rank R's file of a job with logs.dir (DIR/rank-R.log) instead")
      ->type_name("R")
      ->check(CLI::Range(0L, 1000000L))
      ->excludes("--follow");
}

void define(CLI::App& cli, Command& c) {
  cli.name("ddpgen");
  cli.set_version_flag("--version", "ddpgen " DDPGEN_VERSION);
  add_job_options(&cli, c.in);
  cli.add_option("-o,--output", c.output, "write the script here instead of stdout")
      ->type_name("FILE");
  c.profiles = cli.add_subcommand("profiles", "list the site profiles found");
  auto* profile_cmd = cli.add_subcommand("profile", "inspect a site profile, or draft one");
  c.show = profile_cmd->add_subcommand(
      "show", "print the effective profile, each value with the file:line that set it");
  c.show->add_option("name", c.show_name, "profile NAME or PATH")->required();
  c.init = profile_cmd->add_subcommand("init", "draft a profile from the live cluster");
  c.init->add_option("--name", c.init_name, "the profile's name (default mysite)");
  c.init->add_option("-o,--output", c.init_output, "write the profile here instead of stdout");
  profile_cmd->require_subcommand(1);
  c.schema = cli.add_subcommand("schema", "print the JSON Schema of the job file or profile");
  c.schema->add_option("kind", c.schema_kind, "job or profile")
      ->required()
      ->check(CLI::IsMember({"job", "profile"}));
  c.schema->add_flag("--keys", c.schema_keys, "print the job keys --set accepts, one per line");
  c.validate = cli.add_subcommand("validate", "check a job file against a profile; write nothing");
  add_job_options(c.validate, c.vin);
  c.validate->add_flag("--live", c.live, "also compare the profile with the cluster this runs on");
  define_job_commands(cli, c);
  cli.require_subcommand(0, 1);
}

// Parses argv into c; returns the exit status when ddpgen should stop here (help, version, a
// usage error), or nothing.
std::optional<int> parse(CLI::App& cli, int argc, char** argv) {
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cli.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return cli.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return cli.exit(e);
  } catch (const CLI::ExtrasError& e) {
    std::cerr << "ddpgen: error: " << e.what()
              << " (give one job file; options may come before or after it)\n";
    return 2;
  } catch (const CLI::ParseError& e) {
    std::cerr << "ddpgen: error: " << e.what() << " (see ddpgen --help)\n";
    return 2;
  }
  return std::nullopt;
}

// "ddpgen --profile P validate job.yaml" and "ddpgen job.yaml validate --profile P": what
// comes before the subcommand (validate, submit) counts for it too. Returns a usage error, or "".
std::string merge_into(const CLI::App* sub, const Inputs& in, Inputs& sub_in) {
  if (!sub->parsed()) return "";
  if (!in.job_file.empty() && !sub_in.job_file.empty() && in.job_file != sub_in.job_file)
    return "two job files (" + ddp::text::quote(in.job_file) + " and " +
           ddp::text::quote(sub_in.job_file) + "): " + sub->get_name() + " takes one";
  if (sub_in.profile.empty()) sub_in.profile = in.profile;
  if (sub_in.job_file.empty()) sub_in.job_file = in.job_file;
  sub_in.sets.insert(sub_in.sets.begin(), in.sets.begin(), in.sets.end());
  return "";
}

std::string merge_into_subcommands(Command& c) {
  if (std::string error = merge_into(c.validate, c.in, c.vin); !error.empty()) return error;
  return merge_into(c.submit, c.in, c.sin);
}

// submit, status, logs; nothing when the command line asked for none of them.
std::optional<int> execute_job_command(Command& c) {
  if (c.status->parsed() || c.logs->parsed()) {
    const auto checked = check_job_id(c.job_id);
    if (!checked) {
      std::cerr << "ddpgen: error: " << checked.error().to_string() << " (see ddpgen --help)\n";
      return 2;
    }
    const std::string& id = *checked;
    if (c.status->parsed()) unwrap(app::print_job_status(id));
    if (c.logs->parsed() && c.follow) return app::follow_job(id);
    if (c.logs->parsed() && c.rank >= 0)
      unwrap(app::print_rank_log(id, c.rank));
    else if (c.logs->parsed())
      unwrap(app::print_job_output(id));
    return 0;
  }
  if (!c.submit->parsed()) return std::nullopt;
  if (const std::string missing = missing_job_input(c.sin); !missing.empty()) {
    std::cerr << "ddpgen: error: " << missing << " (see ddpgen --help)\n";
    return 2;
  }
  app::SubmitOptions& o = c.submit_options;
  o.profile = c.sin.profile;
  o.job_file = c.sin.job_file;
  o.live = !c.no_live;
  return app::submit(render_job(c.sin), o);
}

int validate(const Command& c) {
  if (c.vin.job_file.empty() && !c.live) {
    std::cerr << "ddpgen: error: validate needs a job file, or --live (see ddpgen --help)\n";
    return 2;
  }
  if (!c.vin.job_file.empty()) {
    render_job(c.vin);
    std::cerr << "ddpgen: " << ddp::text::printable(c.vin.job_file) << ": valid for profile "
              << ddp::text::quote(c.vin.profile) << "\n";
  }
  if (c.live) {
    const Profile profile = unwrap(app::load_profile(c.vin.profile, app::profile_dirs()));
    if (unwrap(app::report_live(profile, c.vin.profile)) > 0) return 1;
  }
  return 0;
}

int execute(Command& c) {
  if (auto status = execute_job_command(c)) return *status;
  if (c.profiles->parsed()) {
    list_profiles();
  } else if (c.show->parsed()) {
    show_profile(c.show_name);
  } else if (c.init->parsed()) {
    unwrap(app::profile_init(c.init_name, c.init_output));
  } else if (c.schema->parsed()) {
    unwrap(app::print_schema(c.schema_kind == "job" ? SchemaKind::job : SchemaKind::profile,
                             c.schema_keys));
  } else {
    const Inputs& job_in = c.validate->parsed() ? c.vin : c.in;
    const bool live_only = c.validate->parsed() && c.live && !c.vin.profile.empty();
    if (const std::string missing = missing_job_input(job_in); !missing.empty() && !live_only) {
      std::cerr << "ddpgen: error: " << missing << " (see ddpgen --help)\n";
      return 2;
    }
    if (c.validate->parsed()) return validate(c);
    const std::string script = render_job(c.in);
    unwrap(c.output.empty() ? app::write_stdout(script) : app::write_file(c.output, script));
  }
  return 0;
}

int run(int argc, char** argv) {
  CLI::App cli{"ddpgen: render a correct sbatch script from a job file and a site profile"};
  Command command;
  define(cli, command);
  if (auto status = parse(cli, argc, argv)) return *status;
  if (const std::string error = merge_into_subcommands(command); !error.empty()) {
    std::cerr << "ddpgen: error: " << error << " (see ddpgen --help)\n";
    return 2;
  }
  return execute(command);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Error& e) {
    std::cerr << "ddpgen: error: " << e.to_string() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "ddpgen: error: internal: " << e.what() << "\n";
  }
  return 1;
}
