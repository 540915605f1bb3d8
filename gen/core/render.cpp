#include "gen/core/render.hpp"

#include <kainjow/mustache.hpp>

#include "gen/core/invocation.hpp"
#include "gen/core/references.hpp"
#include "gen/core/shell.hpp"
#include "libddp/util/shell.hpp"
#include "libddp/util/text.hpp"

namespace ddpgen {
namespace {

namespace mu = kainjow::mustache;

// Looks names up like mustache's own context, but remembers every name it could not find, so
// that render() can refuse instead of writing an empty string.
class StrictContext : public mu::basic_context<std::string> {
 public:
  explicit StrictContext(const mu::data* root) : inner_(root) {}
  void push(const mu::data* data) override { inner_.push(data); }
  void pop() override { inner_.pop(); }
  const mu::data* get(const std::string& name) const override {
    return note(name, inner_.get(name));
  }
  const mu::data* get_partial(const std::string& name) const override {
    return note(">" + name, inner_.get_partial(name));
  }
  const std::vector<std::string>& missing() const { return missing_; }

 private:
  const mu::data* note(const std::string& name, const mu::data* found) const {
    if (!found) missing_.push_back(name);
    return found;
  }
  mu::context<std::string> inner_;
  mutable std::vector<std::string> missing_;
};

// The byte that marks where a standalone tag line was; inputs never contain it (the decoders
// refuse control characters).
constexpr char k_sentinel = '\x1e';

// Applies mustache's standalone-line rule: a line holding only a section tag ({{#x}}, {{^x}},
// {{/x}}) disappears with its newline. kainjow drops such lines only when the section renders
// and keeps a blank line where it is skipped, so each such line becomes "{{tag}}<sentinel>"
// here, and drop_sentinel_lines() removes what is left of it after rendering.
std::string mark_standalone_tags(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    std::size_t end = nl == std::string::npos ? text.size() : nl;
    std::string_view line(text.data() + start, end - start);
    const auto first = line.find_first_not_of(" \t");
    const auto last = line.find_last_not_of(" \t");
    std::string_view tag =
        first == std::string_view::npos ? std::string_view{} : line.substr(first, last + 1 - first);
    const bool standalone = tag.size() > 4 && tag.starts_with("{{") && tag.ends_with("}}") &&
                            (tag[2] == '#' || tag[2] == '^' || tag[2] == '/') &&
                            tag.find("{{", 2) == std::string_view::npos;
    if (standalone) {
      out.append(tag);
      out += k_sentinel;
      out += '\n';
    } else {
      out.append(text, start, nl == std::string::npos ? std::string::npos : nl + 1 - start);
    }
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

std::string drop_sentinel_lines(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
    std::string_view line(text.data() + start, end - start);
    if (line != std::string_view("\x1e\n", 2) && line != std::string_view("\x1e", 1))
      out.append(line);
    start = end;
  }
  return out;
}

// Each word's raw part as is, its user part quoted: the only way user text reaches a command.
mu::data words(const std::vector<Word>& list) {
  mu::data out{mu::data::type::list};
  bool first = true;
  for (const auto& w : list) {
    mu::data item;
    item.set("sep", first ? "" : " ");
    item.set("raw", w.raw);
    item.set("user", !w.user     ? std::string()
                     : w.expands ? shell::quote_expanding(*w.user)
                                 : ddp::shell::quote(*w.user));
    out.push_back(item);
    first = false;
  }
  return out;
}

// Splits text into comment-safe lines.
mu::data comment_lines(const std::vector<std::string>& texts) {
  mu::data out{mu::data::type::list};
  for (const auto& text : texts) {
    std::size_t start = 0;
    while (start <= text.size()) {
      auto nl = text.find('\n', start);
      std::string line = text.substr(start, nl == std::string::npos ? nl : nl - start);
      if (!line.empty() || nl != std::string::npos)
        out.push_back(mu::data("line", ddp::text::printable(line)));
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
  }
  return out;
}

mu::data env_list(const EnvList& env, bool allow_vars) {
  mu::data out{mu::data::type::list};
  for (const auto& [key, value] : env) {
    mu::data item;
    item.set("key", key);
    if (allow_vars)
      item.set("quoted", shell::quote_allowing_vars(value));
    else
      item.set("value", shell::quote_expanding(value));
    out.push_back(item);
  }
  return out;
}

// The job's lines of code, as written.
mu::data code_lines(const std::vector<std::string>& lines) {
  mu::data out{mu::data::type::list};
  for (const auto& line : lines) out.push_back(mu::data("line", line));
  return out;
}

mu::data activate_data(const Plan& plan) {
  if (!plan.activate) return mu::data(false);
  const Activate& a = *plan.activate;
  mu::data out;
  out.set("conda", a.kind == Activate::Kind::conda);
  out.set("venv", a.kind == Activate::Kind::venv);
  out.set("source", a.kind == Activate::Kind::source);
  // The path (or conda's environment name) as the job wrote it, a leading "~" its home and
  // its run-time references expanded (the names the batch shell has before env is exported).
  const std::string value = refs::home_tilde(a.value);
  out.set("value",
          shell::quote_expanding(a.kind == Activate::Kind::venv ? value + "/bin/activate" : value));
  return out;
}

mu::data string_list(const std::vector<std::string>& values) {
  mu::data out{mu::data::type::list};
  for (const auto& v : values) out.push_back(mu::data("name", v));
  return out;
}

mu::data optional_object(bool present, mu::data object) {
  return present ? object : mu::data(false);
}

mu::data requeue_data(const Plan& plan) {
  if (!plan.requeue) return mu::data(false);
  const Requeue& r = *plan.requeue;
  mu::data out;
  out.set("signal", r.signal);
  out.set("signal_time", std::to_string(r.signal_time));
  out.set("grace", std::to_string(r.grace));
  out.set("max_restarts", std::to_string(r.max_restarts));
  out.set("on_failure", r.on_failure);
  out.set("notice", !r.to_processes);
  out.set("on_stall", plan.watchdog && plan.watchdog->requeue);
  return out;
}

// A tool's options as one string of words for the template.
std::string joined(const std::vector<std::string>& list) {
  return ddp::text::join(list, " ");
}

mu::data watchdog_data(const Plan& plan) {
  const auto watch = training_watch(plan);
  return watch ? mu::data("args", joined(words(*watch))) : mu::data(false);
}

// A task's values for a person (a comment line, and what "ddpgen status" shows): "lr=0.1
// batch=32", each value printable.
std::string summary(const std::vector<std::string>& names, const EnvList& values) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i ? " " : "") + names[i] + "=" + ddp::text::printable(values[i].second);
  return out;
}

// sweep: each array task's values, shell-quoted (data, never code).
mu::data sweep_data(const Plan& plan) {
  if (plan.sweep_tasks.empty()) return mu::data(false);
  mu::data tasks{mu::data::type::list};
  for (std::size_t i = 0; i < plan.sweep_tasks.size(); ++i) {
    mu::data task;
    task.set("index", std::to_string(i));
    mu::data values{mu::data::type::list};
    for (const auto& [key, value] : plan.sweep_tasks[i]) {
      mu::data item;
      item.set("sep", values.list_value().empty() ? "" : " ");
      item.set("key", key);
      item.set("value", ddp::shell::quote(value));
      values.push_back(item);
    }
    task.set("values", values);
    task.set("summary", summary(plan.sweep_names, plan.sweep_tasks[i]));
    tasks.push_back(task);
  }
  mu::data out;
  out.set("count", std::to_string(plan.sweep_tasks.size()));
  out.set("last", std::to_string(plan.sweep_tasks.size() - 1));
  out.set("tasks", tasks);
  return out;
}

// Output and error files named by the sweep's values: the script opens them (quoted: data,
// with their run-time references only).
mu::data sweep_files_data(const Plan& plan) {
  mu::data files{mu::data::type::list};
  for (const Plan::SweepFile& f : plan.sweep_files) {
    mu::data file;
    file.set("path", shell::quote_expanding(f.path));
    file.set("what", f.error ? "errors continue" : "output continues");
    file.set("to_stderr", f.error ? " >&2" : "");
    file.set("redirect", std::string(f.error ? "2" : "") + (plan.append ? ">>" : ">"));
    file.set("also", !f.error && !plan.errors_apart ? " 2>&1" : "");
    files.push_back(file);
  }
  return files;
}

// logs: the directory of the rank files.
mu::data logs_data(const Plan& plan) {
  if (plan.logs_dir.empty()) return mu::data(false);
  return mu::data("dir", shell::quote_expanding(plan.logs_dir));
}

// Whether the script has a part of ddpgen's own before the launch (the section's heading).
bool has_machinery(const Plan& plan) {
  return !plan.checkpoint_dir.empty() || plan.requeue || (!plan.plugin && !plan.batch_launch) ||
         !plan.logs_dir.empty() || !plan.accelerate_config_check.empty();
}

// accelerate.config_file's check in the batch shell; the DeepSpeed part only on several nodes.
mu::data accelerate_config_data(const Plan& plan) {
  mu::data config("path", shell::quote_expanding(plan.accelerate_config_check));
  config.set("multinode", plan.nodes > 1);
  return optional_object(!plan.accelerate_config_check.empty(), config);
}

// The header, the directives and the environment: everything before the launch.
void set_preamble(mu::data& d, const Plan& plan, const RenderInput& in) {
  d.set("version", ddp::text::printable(in.version));
  d.set("job_file", ddp::text::printable(in.job_file));
  d.set("profile", ddp::text::printable(plan.profile_name));
  d.set("description", comment_lines({plan.profile_description}));
  d.set("deprecated",
        comment_lines(plan.deprecated.empty() ? std::vector<std::string>{}
                                              : std::vector<std::string>{plan.deprecated}));
  d.set("notes", comment_lines(plan.notes));
  d.set("has_notes", !plan.notes.empty());
  d.set("partition", plan.partition);
  d.set("partition_chosen", plan.partition_chosen);
  d.set("site_chooses", plan.site_chooses);
  d.set("launcher", launcher_name(plan.launcher));
  d.set("nodes", std::to_string(plan.nodes));
  d.set("gpus_per_node", std::to_string(plan.gpus_per_node));
  d.set("procs_per_node", std::to_string(plan.procs_per_node));
  mu::data directives{mu::data::type::list};
  for (const auto& dir : plan.directives) directives.push_back(mu::data("d", dir));
  d.set("directives", directives);
  const bool has_modules = plan.module_purge || !plan.module_use.empty() || !plan.modules.empty();
  d.set("has_modules", has_modules);
  d.set("module_purge", plan.module_purge);
  d.set("module_use", string_list(plan.module_use));
  // Quoted here: a job's module names may hold run-time references (${HOME}, Slurm's job
  // variables), which expand; the site's arrive as written.
  mu::data modules{mu::data::type::list};
  for (std::size_t i = 0; i < plan.modules.size(); ++i) {
    const std::string& m = plan.modules[i];
    const bool job = i + plan.job_modules >= plan.modules.size();
    modules.push_back(mu::data("name", job ? shell::quote_expanding(m) : ddp::shell::quote(m)));
  }
  d.set("modules", modules);
  d.set("has_site_env", !plan.site_env.empty());
  d.set("site_env", env_list(plan.site_env, true));
  d.set("has_job_env", !plan.job_env.empty());
  d.set("job_env", env_list(plan.job_env, false));
  d.set("local_scratch",
        optional_object(!plan.local_scratch.empty(),
                        mu::data("text", ddp::text::printable(plan.local_scratch))));
  d.set("activate", activate_data(plan));
  d.set("has_software", has_modules || plan.activate || !plan.site_env.empty() ||
                            !plan.job_env.empty() || !plan.local_scratch.empty());
  d.set("has_machinery", has_machinery(plan));
  d.set("has_pre", !plan.pre.empty());
  d.set("pre", code_lines(plan.pre));
  mu::data checkpoint;
  checkpoint.set("dir", shell::quote_expanding(plan.checkpoint_dir));
  d.set("checkpoint", optional_object(!plan.checkpoint_dir.empty(), checkpoint));
  d.set("requeue", requeue_data(plan));
  d.set("watchdog", watchdog_data(plan));
  d.set("heal", plan.heal.has_value());
  d.set("sweep", sweep_data(plan));
  d.set("has_sweep_files", !plan.sweep_files.empty());
  d.set("sweep_files", sweep_files_data(plan));
  d.set("logs", logs_data(plan));
  d.set("accelerate_config", accelerate_config_data(plan));
  d.set("spares",
        plan.spares > 0 ? mu::data("count", std::to_string(plan.spares)) : mu::data(false));
}

// The preflight step: ddp-check's options, and ddp-watch's around it with heal.
void set_preflight(mu::data& d, const Plan& plan) {
  d.set("preflight", plan.preflight.has_value());
  // With spares under the plugin, the training's ddp-watch runs the preflight on every node of
  // the job (--first-check), and the first step avoids the nodes it names: no step of its own.
  const bool step = preflight_step(plan);
  d.set("preflight_step", step);
  d.set("preflight_first_check", plan.preflight.has_value() && !step);
  const Preflight p = plan.preflight.value_or(Preflight{});
  d.set("preflight_timeout", std::to_string(p.timeout));
  d.set("preflight_srun", words(plan.preflight_words));
  const auto watch = preflight_watch(plan);
  d.set("preflight_heal", watch ? mu::data("args", joined(words(*watch))) : mu::data(false));
  const auto check = preflight_check(plan);
  d.set("preflight_check", check ? joined(words(*check)) : std::string());
  d.set("preflight_pairs",
        optional_object(p.pairs, mu::data("threshold", shortest(p.pairs_threshold.value_or(0.5)))));
}

// The preflight and training steps.
void set_launch(mu::data& d, const Plan& plan) {
  set_preflight(d, plan);
  const bool step = !plan.batch_launch;  // a training step (srun), not the batch shell
  d.set("plugin_tasks", step && plan.plugin && !plan.torchrun_mode);
  d.set("plugin_torchrun", step && plan.plugin && plan.torchrun_mode);
  d.set("setup", !plan.plugin && (step || plan.preflight));
  d.set("setup_step", !plan.plugin && step);
  d.set("tasks_mode", !plan.torchrun_mode);
  d.set("torchrun_mode", plan.torchrun_mode);
  d.set("port_first", std::to_string(plan.port_first));
  d.set("port_size", std::to_string(plan.port_size));
  d.set("srun", words(plan.srun_words));
  d.set("has_container", !plan.container_words.empty());
  d.set("container", words(plan.container_words));
  d.set("command", words(plan.command_words));
  // task_prefix wraps the program: after the per-task setup, which it would otherwise receive
  // as its arguments. accelerate's wrapper runs accelerate itself, with the prefix in front
  // (plan.accelerate_prefix: its words are among the wrapper's).
  const bool prefix = !plan.prefix_words.empty();
  d.set("prefix_before", prefix && !plan.wrapped);
  d.set("prefix_after", prefix && plan.wrapped);
  d.set("prefix_accelerate", plan.accelerate_prefix);
  d.set("prefix", words(plan.prefix_words));
  // The wrapper's code is single-quoted in the script; it is ddpgen's own text and never
  // contains a quote (checked in render()). Without the plugin, the task setup runs first,
  // with its parameters before the command.
  const std::string setup_args = task_setup_args(plan);
  d.set("setup_args", setup_args);
  mu::data wrapper;
  wrapper.set("code", (plan.plugin ? "'" : "\"$ddpgen_task_setup\"'") + plan.wrapper_exec + "'");
  std::vector<Word> args;
  if (!plan.plugin) args.push_back({setup_args, {}});
  args.insert(args.end(), plan.wrapper_args.begin(), plan.wrapper_args.end());
  wrapper.set("args", words(args));
  d.set("wrapper", optional_object(plan.wrapped, wrapper));
  d.set("accelerate", plan.launcher == Launcher::accelerate);
  d.set("batch_launch", plan.batch_launch);
  // Continuation lines are indented under srun; launcher none's command starts the line.
  const bool continued = step || !plan.rank_log_words.empty();
  d.set("rank_log", optional_object(!plan.rank_log_words.empty(),
                                    mu::data("words", words(plan.rank_log_words))));
  d.set("rank_log_indent", step ? "  " : "");
  d.set("prefix_indent", continued ? "  " : "");
  d.set("command_indent", continued || !plan.prefix_words.empty() ? "  " : "");
  // How the training command ends: in the background for the requeue trap, its status kept for
  // the post: lines, or as the script's last command.
  const bool post = !plan.post.empty();
  const auto& r = plan.requeue;
  const bool background = r && !r->to_processes;
  const bool status =
      post || background || (r && (r->on_failure || (plan.watchdog && plan.watchdog->requeue)));
  d.set("launch_end", background ? " &" : status ? " || ddpgen_status=$?" : "");
  d.set("has_pre_status", status && !background);
  d.set("has_post", post);
  d.set("post", code_lines(plan.post));
  d.set("has_status", status);
}

// The task setup file without its leading comment lines ("#!/bin/bash" and what the script's
// own comment says): the code every task receives as an argument.
std::string task_setup_code(const std::string& text) {
  std::size_t start = 0;
  while (start < text.size() && text[start] == '#') {
    const auto nl = text.find('\n', start);
    start = nl == std::string::npos ? text.size() : nl + 1;
  }
  return "\n" + text.substr(start);
}

mu::data build(const Plan& plan, const RenderInput& in) {
  mu::data d;
  d.set("task_setup", task_setup_code(in.task_setup_text));
  set_preamble(d, plan, in);
  set_launch(d, plan);
  return d;
}

}  // namespace

Result<std::string> render(const Plan& plan, const RenderInput& input) {
  const Location where{input.template_name, 0, 0};
  if (plan.wrapper_exec.find('\'') != std::string::npos)
    return ddp::fail(where, "internal error: wrapper code contains a quote");
  if (input.task_setup_text.find('\'') != std::string::npos)
    return ddp::fail({input.task_setup_name, 0, 0},
                     "contains a single quote, but it is written between single quotes");
  mu::mustache tmpl{mark_standalone_tags(input.template_text)};
  if (!tmpl.is_valid()) return ddp::fail(where, "template error: " + tmpl.error_message());
  tmpl.set_custom_escape([](const std::string& s) { return ddp::shell::quote(s); });
  const mu::data data = build(plan, input);
  StrictContext context(&data);
  std::string out = drop_sentinel_lines(tmpl.render(context));
  if (!tmpl.is_valid()) return ddp::fail(where, "template error: " + tmpl.error_message());
  if (!context.missing().empty())
    return ddp::fail(where, "template uses {{" + context.missing().front() +
                                "}}, which ddpgen does not provide");
  if (out.find(k_sentinel) != std::string::npos)
    return ddp::fail(where, "template error: a section tag shares a line with text");
  return out;
}

}  // namespace ddpgen
