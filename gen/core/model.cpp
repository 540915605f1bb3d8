#include "gen/core/model.hpp"

namespace ddpgen {

const char* launcher_name(Launcher launcher) {
  switch (launcher) {
    case Launcher::torchrun:
      return "torchrun";
    case Launcher::srun:
      return "srun";
    case Launcher::accelerate:
      return "accelerate";
    case Launcher::lightning:
      return "lightning";
    case Launcher::fairseq:
      return "fairseq";
    case Launcher::none:
      return "none";
  }
  return "torchrun";
}

const std::vector<std::string>& container_runtime_names() {
  static const std::vector<std::string> names = {"apptainer", "singularity", "pyxis",
                                                 "shifter",   "podman-hpc",  "edf"};
  return names;
}

long Sweep::size() const {
  long n = parameters.empty() ? 0 : 1;
  for (const auto& [name, list] : parameters) n *= static_cast<long>(list.size());
  return n;
}

std::vector<std::string> Sweep::values(long index) const {
  std::vector<std::string> out(parameters.size());
  for (std::size_t i = parameters.size(); i-- > 0;) {
    const auto& list = parameters[i].second;
    const long n = static_cast<long>(list.size());
    out[i] = list[static_cast<std::size_t>(index % n)];
    index /= n;
  }
  return out;
}

Location Job::at(const std::string& key) const {
  auto it = where.find(key);
  if (it != where.end()) return it->second;
  return {file, 1, 1};
}

}  // namespace ddpgen
