// The Slurm side of the plugin test host: spank_* and slurm_* functions with the signatures of
// Slurm's headers, driven by fake::step(). They behave as slurmstepd's do where the plugin
// depends on it: spank_getenv reports ESPANK_NOSPACE for a short buffer, spank_setenv with
// overwrite 0 reports ESPANK_ENV_EXISTS, a bad handle is ESPANK_BAD_ARG.
#include "fake_slurm.hpp"

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurm_version.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace fake {
namespace {

struct Handle {
  int unused = 0;
};
Handle the_handle;

std::string format(const char* fmt, va_list args) {
  char line[4096];
  std::vsnprintf(line, sizeof line, fmt, args);
  return line;
}

bool ours(spank_t sp) {
  return sp == handle();
}

char* copy(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

}  // namespace

Step& step() {
  static Step the_step;
  return the_step;
}

spank_t handle() {
  return reinterpret_cast<spank_t>(&the_handle);
}

bool out_of_memory = false;

}  // namespace fake

// The process's operator new, the plugin's included (it binds to this exported one): it fails
// while fake::out_of_memory is set. Sanitizer builds keep their own allocator.
#if !defined(__SANITIZE_ADDRESS__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"  // this new is malloc, its delete free
void* operator new(std::size_t size) {
  if (fake::out_of_memory) throw std::bad_alloc();
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
#endif

#define FAKE_EXPORT __attribute__((visibility("default")))

// ESPANK_SUCCESS is a plain 0 (#define), the other codes are spank_err_t enumerators.
constexpr spank_err_t k_success = static_cast<spank_err_t>(ESPANK_SUCCESS);

extern "C" {

FAKE_EXPORT spank_context_t spank_context(void) {
  return fake::step().context;
}

FAKE_EXPORT spank_err_t spank_option_register(spank_t sp, struct spank_option* opt) {
  if (!fake::ours(sp) || opt == nullptr) return ESPANK_BAD_ARG;
  fake::step().options.push_back(*opt);
  return k_success;
}

FAKE_EXPORT spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...) {
  if (!fake::ours(sp)) return ESPANK_BAD_ARG;
  fake::Step& s = fake::step();
  va_list args;
  va_start(args, item);
  spank_err_t rc = k_success;
  if (item == S_JOB_LOCAL_TO_GLOBAL_ID) {
    const std::uint32_t local = va_arg(args, std::uint32_t);
    auto* global = va_arg(args, std::uint32_t*);
    if (local < s.global_ids.size())
      *global = s.global_ids[local];
    else
      rc = ESPANK_BAD_ARG;
  } else if (auto found = s.items.find(item); found == s.items.end()) {
    rc = item == S_TASK_ID || item == S_TASK_GLOBAL_ID ? ESPANK_NOT_TASK : ESPANK_BAD_ARG;
  } else if (item == S_TASK_ID) {
    *va_arg(args, int*) = static_cast<int>(found->second);
  } else {
    *va_arg(args, std::uint32_t*) = found->second;
  }
  va_end(args);
  return rc;
}

FAKE_EXPORT spank_err_t spank_getenv(spank_t sp, const char* var, char* buf, int len) {
  if (!fake::ours(sp) || var == nullptr || buf == nullptr || len < 0) return ESPANK_BAD_ARG;
  fake::Step& s = fake::step();
  ++s.getenv_calls;
  auto found = s.env.find(var);
  if (found == s.env.end()) return ESPANK_ENV_NOEXIST;
  if (found->second.size() + 1 > static_cast<std::size_t>(len)) {
    if (len > 0) buf[0] = '\0';
    return ESPANK_NOSPACE;
  }
  std::memcpy(buf, found->second.c_str(), found->second.size() + 1);
  return k_success;
}

FAKE_EXPORT spank_err_t spank_setenv(spank_t sp, const char* var, const char* val, int overwrite) {
  if (!fake::ours(sp) || var == nullptr || val == nullptr) return ESPANK_BAD_ARG;
  fake::Step& s = fake::step();
  if (s.refuse_setenv && *s.refuse_setenv == var) return ESPANK_ERROR;
  if (!overwrite && s.env.contains(var)) return ESPANK_ENV_EXISTS;
  s.env[var] = val;
  return k_success;
}

// Recorded, and shown on stderr as slurmstepd's log would show it, so that a death test (a task
// the plugin ends) can match the message its child process printed.
FAKE_EXPORT void slurm_error(const char* fmt, ...) {
  const bool was_out_of_memory = fake::out_of_memory;
  fake::out_of_memory = false;
  va_list args;
  va_start(args, fmt);
  fake::step().errors.push_back(fake::format(fmt, args));
  va_end(args);
  std::fprintf(stderr, "error: %s\n", fake::step().errors.back().c_str());
  fake::out_of_memory = was_out_of_memory;
}

FAKE_EXPORT void slurm_info(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fake::step().infos.push_back(fake::format(fmt, args));
  va_end(args);
}

// libslurm's, found by the plugin with dlsym at run time, with the argument list of the release
// whose headers this is built with (a mismatch with slurm.h's declaration does not compile):
// (job, step, signal) up to 23.02, (job, step, signal, flags) from 23.11, (slurm_step_id_t *,
// signal, flags) in 26.05.
namespace fake {
int kill(std::uint32_t job_id, std::uint32_t step_id, std::uint16_t signal) {
  step().kills.push_back({job_id, step_id, signal});
  if (step().kill_result != 0) errno = ESLURM_INVALID_JOB_ID;
  return step().kill_result;
}
}  // namespace fake

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
FAKE_EXPORT int slurm_kill_job_step(slurm_step_id_t* step_id, uint16_t signal, uint16_t /*flags*/) {
  return fake::kill(step_id->job_id, step_id->step_id, signal);
}
#elif SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
FAKE_EXPORT int slurm_kill_job_step(uint32_t job_id, uint32_t step_id, uint16_t signal,
                                    uint16_t /*flags*/) {
  return fake::kill(job_id, step_id, signal);
}
#else
FAKE_EXPORT int slurm_kill_job_step(uint32_t job_id, uint32_t step_id, uint16_t signal) {
  return fake::kill(job_id, step_id, signal);
}
#endif

FAKE_EXPORT char* slurm_strerror(int error) {
  return const_cast<char*>(error == ESLURM_INVALID_JOB_ID ? "Invalid job id specified"
                                                          : "unknown error");
}

// libslurm internals the plugin uses for NodeAddr (NodeName -> NodeHostname -> NodeAddr).
FAKE_EXPORT char* slurm_conf_get_hostname(const char* node) {
  return fake::step().node_addrs.contains(node) ? fake::copy(node) : nullptr;
}

FAKE_EXPORT char* slurm_conf_get_nodeaddr(const char* host) {
  auto found = fake::step().node_addrs.find(host);
  return found == fake::step().node_addrs.end() ? nullptr : fake::copy(found->second);
}

FAKE_EXPORT void slurm_xfree_ptr(void* ptr) {
  std::free(ptr);
}

}  // extern "C"
