// sysfs reading and dlopen() for the fabric assertion; the verdict is fabric.cpp's.
#include "ddp-check/fabric/probe_io.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "libddp/util/text.hpp"

namespace ddp::check {
namespace {

namespace fs = std::filesystem;

// The first line of a small file, "" when it cannot be read.
std::string first_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return std::string(text::trim(line));
}

// The names in `dir`, sorted; none when it does not exist.
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The driver a device is bound to: the last part of its device/driver link.
std::string driver_of(const fs::path& device) {
  std::error_code ec;
  fs::path target = fs::read_symlink(device / "device" / "driver", ec);
  return ec ? std::string() : target.filename().string();
}

std::vector<Link> links_in(const fs::path& dir, bool skip_loopback) {
  std::vector<Link> out;
  for (const std::string& name : entries(dir)) {
    if (skip_loopback && name == "lo") continue;
    out.push_back({name, first_line(dir / name / "operstate")});
  }
  return out;
}

}  // namespace

FabricFacts read_fabric_facts(const std::string& root) {
  FabricFacts facts;
  const fs::path ib = fs::path(root) / "class" / "infiniband";
  for (const std::string& dev : entries(ib)) {
    const std::string driver = driver_of(ib / dev);
    for (const std::string& port : entries(ib / dev / "ports")) {
      const fs::path p = ib / dev / "ports" / port;
      facts.rdma_ports.push_back(
          {dev, port, first_line(p / "state"), first_line(p / "link_layer"), driver});
    }
  }
  const fs::path cxi = fs::path(root) / "class" / "cxi";
  for (const std::string& dev : entries(cxi)) {
    facts.cxi_devices.push_back(dev);
    for (Link& l : links_in(cxi / dev / "device" / "net", false)) facts.cxi_links.push_back(l);
  }
  facts.links = links_in(fs::path(root) / "class" / "net", true);
  return facts;
}

Result<std::string> load_net_plugin(std::string_view name) {
  std::vector<std::string> tried;
  for (const std::string& file : net_plugin_files(name)) {
    // RTLD_NOW as NCCL does: a plugin with an unresolved symbol fails here, not mid-training.
    void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      tried.push_back(file + " (" + (why != nullptr ? why : "not loadable") + ")");
      continue;
    }
    bool is_plugin = false;
    for (const std::string& symbol : net_plugin_symbols()) {
      is_plugin = is_plugin || dlsym(lib, symbol.c_str()) != nullptr;
    }
    dlclose(lib);
    if (is_plugin) return file;
    tried.push_back(file + " (loads, but exports no ncclNetPlugin_v* symbol)");
  }
  return fail("NCCL net plugin " + text::quote(name) +
              " cannot be loaded: " + text::join(tried, "; "));
}

}  // namespace ddp::check
