#!/usr/bin/env bash
# Installs every Debian 12 package slurm-ddp needs to build, test and run its embedded Slurm
# cluster, from Debian's own archive only. Root; non-interactive; safe to run again (when all
# packages are already installed it touches nothing, DDP_DEPS_FORCE=1 runs apt anyway).
# Debian's own munge/slurmctld/slurmd services are never started: the test cluster runs its
# own daemons (tests/cluster/cluster.sh), and a stray slurmd or munged would only confuse.
set -euo pipefail

readonly k_packages=(
  # build
  build-essential cmake g++ pkg-config git ca-certificates
  # Slurm and munge: headers for the plugin, daemons and clients for the embedded cluster
  libslurm-dev slurm-wlm slurmctld slurmd slurm-client munge
  # MUNGE's library: ddp-check signs and verifies every hello with it
  libmunge-dev
  # Debian's clang and its libFuzzer runtime, for the wire-format fuzz test (tests/fuzz)
  clang libclang-rt-14-dev
  # libraries of ddpgen and the tests
  libyaml-cpp-dev libfmt-dev libhwloc-dev libcli11-dev libkainjow-mustache-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # PyTorch for the real DDP rendezvous in the cluster tests and examples
  python3-torch python3-numpy
  # tqdm: the watchdog's cluster tests run a real progress bar (tests/cluster/watchdog-real.bats)
  python3-tqdm
  # libFuzzer (Debian clang's runtime) for ddpgen's fuzz targets (tests/fuzz)
  clang libclang-rt-14-dev
  # test tools, and what cluster.sh uses: ip netns, nsenter/unshare, mount, pgrep/ps, hostname
  shellcheck bats iproute2 util-linux mount procps hostname coreutils
  # tests/bench/compare_handwritten.sh counts the processes a batch script starts
  strace
  # debootstrap makes the Debian userlands of the other Slurm releases the cluster tests run
  # (tests/cluster/userland.sh: Debian 13's 24.11, unstable's 26.05)
  debootstrap
  # libFuzzer for tests/fuzz: clang-16 (clang 14 has no std::expected with libstdc++ 12)
  clang-16 libclang-rt-16-dev
  # Lmod, for the site-emulation tests (cluster.sh up --site: sites' module names, stubbed)
  lmod
  # packages (contrib/packaging/package.sh: .deb and .rpm) and their checks; man pages; the JSON
  # Schemas checked against the shipped files; zsh to syntax-check the zsh completion
  dpkg-dev debhelper fakeroot lintian rpm mandoc python3-jsonschema python3-yaml zsh
)

die() { printf 'install-deps.sh: error: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "run as root (apt-get install)"
command -v apt-get >/dev/null || die "apt-get not found: this script is for Debian 12"
if [[ -r /etc/os-release ]] && ! grep -qE '^VERSION_ID="?12"?' /etc/os-release; then
  echo "install-deps.sh: warning: written for Debian 12; this is $(grep -m1 '^PRETTY_NAME=' /etc/os-release | cut -d= -f2-)" >&2
fi

missing=()
for pkg in "${k_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if ((${#missing[@]} == 0)) && [[ ${DDP_DEPS_FORCE:-0} != 1 ]]; then
  echo "install-deps.sh: all ${#k_packages[@]} packages already installed"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
# invoke-rc.d asks policy-rc.d before starting a service; 101 means "not allowed". Only a file
# this script created is removed again (containers often ship one of their own).
policy=/usr/sbin/policy-rc.d
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\n# slurm-ddp install-deps.sh: no service starts during installation\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi

echo "install-deps.sh: installing ${missing[*]:-${k_packages[*]}}"
apt-get update
apt-get install -y --no-install-recommends -o Dpkg::Options::=--force-confdef \
  -o Dpkg::Options::=--force-confold "${k_packages[@]}"

# Should anything have started them anyway (systemd presets, an older policy), stop them and
# keep them from starting at boot.
services=(munge slurmctld slurmd)
if [[ -d /run/systemd/system ]]; then
  systemctl disable --now "${services[@]}" >/dev/null 2>&1 || true
else
  for svc in "${services[@]}"; do
    if [[ -x /etc/init.d/$svc ]]; then
      "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
      update-rc.d "$svc" disable >/dev/null 2>&1 || true
    fi
  done
fi
echo "install-deps.sh: done"
