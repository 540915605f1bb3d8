// ddpgen's command line: gathers inputs, calls the core, reports. Errors are thrown as one
// type and caught once, here.
#include <CLI/CLI.hpp>
#include <iostream>
#include <stdexcept>

#include "../core/job.hpp"
#include "../core/plan.hpp"
#include "../core/render.hpp"
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
              << "\" is deprecated: " << profile.deprecated << "\n";
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
  cli.add_option("--profile", in.profile, "site profile: NAME or PATH");
  cli.add_option("job", in.job_file, "job file (YAML)");
  cli.add_option("-o,--output", output, "write the script here instead of stdout");
  cli.add_option("--set", in.sets, "override a job key: KEY=VALUE (repeatable)");

  auto* profiles = cli.add_subcommand("profiles", "list the site profiles found");
  auto* profile_cmd = cli.add_subcommand("profile", "inspect one site profile");
  auto* show = profile_cmd->add_subcommand("show", "print a profile and the ones it extends");
  std::string show_name;
  show->add_option("name", show_name, "profile NAME or PATH")->required();
  profile_cmd->require_subcommand(1);
  auto* validate =
      cli.add_subcommand("validate", "check a job file against a profile; write nothing");
  Inputs vin;
  validate->add_option("--profile", vin.profile, "site profile: NAME or PATH")->required();
  validate->add_option("job", vin.job_file, "job file (YAML)")->required();
  validate->add_option("--set", vin.sets, "override a job key: KEY=VALUE (repeatable)");
  cli.require_subcommand(0, 1);

  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cli.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return cli.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return cli.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "ddpgen: error: " << e.what() << " (see ddpgen --help)\n";
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
    if (in.profile.empty() || in.job_file.empty()) {
      std::cerr << "ddpgen: error: usage: ddpgen --profile NAME|PATH JOB.yaml [-o FILE] "
                   "[--set KEY=VALUE ...] (see ddpgen --help)\n";
      return 2;
    }
    const std::string script = render_job(in);
    if (output.empty())
      std::cout << script;
    else
      unwrap(app::write_file(output, script));
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
