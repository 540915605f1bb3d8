#include "ddp-watch/slurm.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace ddp::watch {
namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const std::string& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string capture(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return "";
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return "";
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    auto args = c_argv(argv);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) out.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? out : "";
}

std::vector<Step> running_steps(const std::string& job_id) {
  std::vector<Step> steps;
  if (job_id.empty()) return steps;
  std::istringstream in(
      capture({"squeue", "--noheader", "--steps", "--jobs=" + job_id, "--format=%i %N"}));
  for (Step s; in >> s.id >> s.nodes;) {
    // The batch shell (this process's own) and the extern step are not the program.
    if (s.id.ends_with(".batch") || s.id.ends_with(".extern") || s.id.ends_with(".interactive")) {
      continue;
    }
    steps.push_back(s);
  }
  return steps;
}

std::string self_path() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "ddp-watch";
}

bool run_command(const std::vector<std::string>& argv) {
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    auto args = c_argv(argv);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool signal_step(const std::string& step, const std::string& signal) {
  return run_command({"scancel", "--signal=" + signal, step});
}

Child spawn(const std::vector<std::string>& command, const std::vector<std::string>& env) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return {};
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return {};
  }
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    auto args = c_argv(command);
    execvp(args[0], args.data());
    std::string msg = "ddp-watch: cannot run " + command[0] + ": " + std::strerror(errno) + "\n";
    (void)!write(STDERR_FILENO, msg.data(), msg.size());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  if (pid < 0) {
    close(out[0]);
    close(err[0]);
    return {};
  }
  return Child{pid, out[0], err[0]};
}

}  // namespace ddp::watch
