#include "files.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ddpgen::app {

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ddp::fail({path, 0, 0}, std::string("cannot read: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return ddp::fail({path, 0, 0}, "read error");
  return text.str();
}

Result<void> write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".ddpgen-tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return ddp::fail({path, 0, 0}, std::string("cannot write: ") + std::strerror(errno));
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return ddp::fail({path, 0, 0}, "write error");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return ddp::fail({path, 0, 0}, std::string("cannot write: ") + std::strerror(err));
  }
  return {};
}

}  // namespace ddpgen::app
