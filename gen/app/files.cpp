#include "gen/app/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

namespace ddpgen::app {
namespace {

namespace fs = std::filesystem;

// The most read_file reads: a file that grows past it (a log given by mistake) is refused.
constexpr std::size_t k_max_input = 4 * 1024 * 1024;

std::unexpected<Error> io_error(const std::string& path, const std::string& what, int err) {
  return ddp::fail({path, 0, 0}, what + ": " + std::strerror(err));
}

// Writes all of text to fd, through short writes and interrupted calls; returns errno or 0.
int write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

// The mode the script gets: an existing regular file's permission bits (the user may have made
// it executable), else what a plain open(path, O_CREAT, 0666) would give (mkstemp makes 0600).
// Write bits the umask withholds are never copied, nor setuid, setgid or sticky: a file another
// user planted with mode 0666 does not make the new script writable by others.
mode_t script_mode(const std::string& path) {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
    return st.st_mode & 0777 & ~(mask & 0022);
  return 0666 & ~mask;
}

// Writes, syncs and closes fd (a new temporary file); returns errno or 0.
int fill(int fd, mode_t mode, const std::string& text, std::string& step) {
  step = "cannot write";
  int err = ::fchmod(fd, mode) == 0 ? write_all(fd, text) : errno;
  if (err == 0 && ::fsync(fd) != 0) {
    step = "cannot sync";
    err = errno;
  }
  // close() reports what a network file system defers (quota, space): checked, not assumed.
  if (::close(fd) != 0 && err == 0) {
    step = "cannot close";
    err = errno;
  }
  return err;
}

// True when path leads (through symlinks) to something that is not a file to replace: a
// terminal, a pipe, /dev/null, /dev/stdout. Renaming over it would put a regular file in the
// place of a device node or of /dev/stdout's link, so the script is written into it instead.
bool is_special(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

// Opens a device, pipe or socket for writing without ever blocking: a FIFO nobody reads fails
// with ENXIO instead of waiting for a reader; one that gets a reader within a second (a reader
// started just before ddpgen) is written. The descriptor is made blocking again for the write.
int open_special(const std::string& path) {
  constexpr int k_tries = 50;  // 50 x 20 ms
  for (int attempt = 1;; ++attempt) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
      const int flags = ::fcntl(fd, F_GETFL);
      if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
      return fd;
    }
    if (errno != ENXIO || attempt == k_tries) return -1;
    ::usleep(20000);
  }
}

Result<void> write_special(const std::string& path, const std::string& text) {
  const int fd = open_special(path);
  if (fd < 0 && errno == ENXIO)
    return ddp::fail({path, 0, 0}, "cannot open: no process reads this FIFO (waited 1 s)");
  if (fd < 0) return io_error(path, "cannot open", errno);
  int err = write_all(fd, text);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) return io_error(path, "cannot write the script", err);
  return {};
}

}  // namespace

Result<std::string> read_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO nobody writes returns at once instead of waiting; it and any other
  // file that is not a regular one (/dev/zero, a terminal) is refused after fstat.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return io_error(path, "cannot read", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error(path, "cannot read", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return ddp::fail({path, 0, 0}, S_ISDIR(st.st_mode)
                                       ? "cannot read: it is a directory"
                                       : "cannot read: not a regular file (a pipe, a device or a "
                                         "socket); give the path of a file");
  }
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return io_error(path, "read error", err);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > k_max_input) {
      ::close(fd);
      return ddp::fail({path, 0, 0}, "cannot read: larger than " +
                                         std::to_string(k_max_input / (1024 * 1024)) +
                                         " MiB, far more than a job file, profile or template");
    }
  }
  ::close(fd);
  return text;
}

Result<void> write_file(const std::string& path, const std::string& text, bool into_special) {
  if (into_special && is_special(path)) return write_special(path, text);
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  // mkstemp: a fresh name, created with O_EXCL (never an existing file or symlink), in the
  // target's directory so that the rename stays on one file system and is atomic.
  std::string name = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  std::vector<char> buffer(name.begin(), name.end());
  buffer.push_back('\0');
  const int fd = ::mkstemp(buffer.data());
  if (fd < 0) return io_error(path, "cannot create a file in " + dir.string(), errno);
  const std::string tmp(buffer.data());
  std::string step;
  int err = fill(fd, script_mode(path), text, step);
  if (err == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) {
    step = "cannot replace";
    err = errno;
  }
  if (err != 0) {
    ::unlink(tmp.c_str());
    return io_error(path, step + " (nothing written)", err);
  }
  // The rename is durable once the directory is synced; the script is complete either way.
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

Result<void> write_stdout(const std::string& text) {
  if (const int err = write_all(STDOUT_FILENO, text); err != 0)
    return io_error("standard output", "cannot write the script", err);
  return {};
}

}  // namespace ddpgen::app
