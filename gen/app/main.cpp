// ddpgen's command line: gathers inputs, calls the core, reports. Errors are thrown as one
// type and caught once, here.
#include <CLI/CLI.hpp>
#include <iostream>
#include <stdexcept>

#include "../core/job.hpp"
#include "../core/plan.hpp"
#include "../core/render.hpp"
#include "../core/shell.hpp"
#include "files.hpp"
#include "paths.hpp"
#include "profile_store.hpp"

namespace {

using namespace ddpgen;

constexpr const char* k_template = "sbatch.sh.mustache";

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
                       ? "expected KEY=VALUE, e.g. --set partition=gpu; got \"" +
                             shell::comment_safe(set) + "\""
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
  std::string script = unwrap(render(
      p, {DDPGEN_VERSION, in.job_file, template_path, unwrap(app::read_file(template_path))}));
  // Said after the checks so that an error is the last line a user sees.
  if (!profile.deprecated.empty())
    std::cerr << "ddpgen: warning: profile \"" << profile.name
              << "\" is deprecated: " << shell::comment_safe(profile.deprecated) << "\n";
  return script;
}

void list_profiles() {
  for (const auto& file : app::list_profiles(app::profile_dirs())) {
    auto profile = app::load_profile(file.path, {});
    if (!profile) {
      std::cout << file.name << "  (broken: " << profile.error().to_string() << ")\n";
      continue;
    }
    if (profile->abstract) continue;
    std::cout << file.name << std::string(file.name.size() < 20 ? 20 - file.name.size() : 1, ' ')
              << profile->description.substr(0, profile->description.find('\n'))
              << (profile->deprecated.empty() ? "" : " [deprecated]") << "\n";
  }
}

void show_profile(const std::string& name) {
  std::vector<app::ProfileFile> chain;
  unwrap(app::load_profile(name, app::profile_dirs(), &chain));
  for (const auto& file : chain) {
    std::cout << "# ---- " << file.path << "\n" << unwrap(app::read_file(file.path));
  }
}

int run(int argc, char** argv) {
  CLI::App cli{"ddpgen: render a correct sbatch script from a job file and a site profile"};
  cli.name("ddpgen");
  cli.set_version_flag("--version", "ddpgen " DDPGEN_VERSION);
  Inputs in;
  std::string output;
  add_job_options(&cli, in);
  cli.add_option("-o,--output", output, "write the script here instead of stdout")
      ->type_name("FILE");

  auto* profiles = cli.add_subcommand("profiles", "list the site profiles found");
  auto* profile_cmd = cli.add_subcommand("profile", "inspect one site profile");
  auto* show = profile_cmd->add_subcommand("show", "print a profile and the ones it extends");
  std::string show_name;
  show->add_option("name", show_name, "profile NAME or PATH")->required();
  profile_cmd->require_subcommand(1);
  auto* validate =
      cli.add_subcommand("validate", "check a job file against a profile; write nothing");
  Inputs vin;
  add_job_options(validate, vin);
  cli.require_subcommand(0, 1);

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
  const Inputs& job_in = validate->parsed() ? vin : in;
  if (!profiles->parsed() && !show->parsed())
    if (const std::string missing = missing_job_input(job_in); !missing.empty()) {
      std::cerr << "ddpgen: error: " << missing << " (see ddpgen --help)\n";
      return 2;
    }

  if (profiles->parsed()) {
    list_profiles();
  } else if (show->parsed()) {
    show_profile(show_name);
  } else if (validate->parsed()) {
    render_job(vin);
    std::cerr << "ddpgen: " << vin.job_file << ": valid for profile \"" << vin.profile << "\"\n";
  } else {
    const std::string script = render_job(in);
    unwrap(output.empty() ? app::write_stdout(script) : app::write_file(output, script));
  }
  return 0;
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
