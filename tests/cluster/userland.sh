#!/usr/bin/env bash
# The Debian userland of one Slurm release, for the embedded test cluster and the release builds:
# a chroot made with debootstrap from Debian's archive, holding that release's slurmctld, slurmd,
# slurmstepd, client commands, munge, headers, compilers, build libraries and python3-torch.
#
#   userland.sh host                   this machine's own Slurm release (e.g. 22.05)
#   userland.sh suite RELEASE          the Debian suite that ships RELEASE (22.05, 24.11, 26.05)
#   userland.sh root RELEASE           the chroot's path; "/" when this machine's own Slurm is
#                                      RELEASE (nothing to make); exit 1 when it is not made yet
#   userland.sh ensure RELEASE         make the chroot if it is missing or stale; print its path;
#                                      exit 3 when the suite no longer ships RELEASE
#   userland.sh exec RELEASE CMD...    run CMD in RELEASE's userland (this machine's network)
#   userland.sh enter ROOT CMD...      (cluster.sh) bind the shared paths into ROOT and chroot;
#                                      only inside a private mount namespace of the caller's
#   userland.sh remove RELEASE         delete the chroot (the package cache stays)
#
# Chroots live in ${DDP_USERLAND_DIR:-/tmp/ddp-userland}/SUITE and are reused between runs and
# between clusters (they are only read once made); downloaded packages stay in apt-SUITE/ beside
# them, so remaking a chroot downloads nothing. Neither has to exist: `ensure` makes what is
# missing, under a lock, so that two clusters started at once make it once.
# Inside, /tmp, /proc, /sys, /dev and this checkout are the same paths as outside: a test hands a
# file under /tmp or a binary of build-slurm-RELEASE/ to the cluster as it is. The binds are made
# in a mount namespace of their own for every command and vanish with it: nothing is ever left
# mounted under the chroot, so `rm -rf` of it is always safe.
# Mirror: DDP_DEBIAN_MIRROR, else the Debian archive this machine's apt sources use.
set -euo pipefail

readonly k_dir=${DDP_USERLAND_DIR:-/tmp/ddp-userland}
k_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly k_repo
k_self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
readonly k_self
# What a release's userland holds: the cluster's daemons and clients, munge, what builds the
# whole project with warnings as errors (the same libraries as contrib/install-deps.sh), and
# what the jobs of the cluster tests run in their tasks (bash, hostname, python3-torch).
readonly k_packages=(
  slurmctld slurmd slurm-client munge libslurm-dev libmunge-dev
  g++ cmake make pkg-config
  libyaml-cpp-dev libfmt-dev libhwloc-dev libcli11-dev libkainjow-mustache-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-torch python3-numpy
  procps hostname iproute2 util-linux
)

# The packages of SUITE's userland, one a line: the list above, and what only one suite adds:
# unstable ships Apptainer, which the container test of the 26.05 stage runs
# (tests/cluster/apptainer.bats).
suite_packages() {
  printf '%s\n' "${k_packages[@]}"
  case $1 in
    sid) echo apptainer ;;
  esac
}

die() { printf 'userland.sh: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'userland.sh: %s\n' "$*" >&2; }

# Debian suite per Slurm release: 22.05 is Debian 12's, 24.11 Debian 13's (and AWS
# ParallelCluster 3's), 26.05 unstable's at the time of writing. When unstable moves on to
# another release, `ensure 26.05` stops with the version it found instead of testing the wrong one.
suite_of() {
  case $1 in
    22.05) echo bookworm ;;
    24.11) echo trixie ;;
    26.05) echo sid ;;
    *) die "Slurm $1: not a release this project tests (22.05, 24.11, 26.05)" ;;
  esac
}

# "22.05" from "22.05.8-4+deb12u3".
major_minor() { sed -E 's/^([0-9]+\.[0-9]+).*/\1/'; }

host_release() {
  dpkg-query -W -f='${Version}' slurmctld 2>/dev/null | major_minor
}

mirror() {
  if [[ -n ${DDP_DEBIAN_MIRROR:-} ]]; then echo "$DDP_DEBIAN_MIRROR"; return; fi
  local url
  url=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
          2>/dev/null | grep -oE 'https?://[^ ]*/debian/?( |$)' | grep -v security | head -n1 | tr -d ' ')
  echo "${url:-http://deb.debian.org/debian}"
}

# The stamp records what the chroot was made with; another package list tops it up (top_up_chroot).
stamp_text() { echo "$1"; suite_packages "$1"; }

cmd_root() {
  local release=$1 suite
  suite=$(suite_of "$release")
  if [[ $(host_release) == "$release" ]]; then echo /; return; fi
  [[ -f $k_dir/$suite.ready && $(cat "$k_dir/$suite.ready") == "$(stamp_text "$suite")" ]] ||
    return 1
  echo "$k_dir/$suite"
}

# Runs CMD in ROOT with the shared paths bound in; the caller made a private mount namespace.
cmd_enter() {
  local root=$1; shift
  [[ -x $root/bin/sh ]] || die "enter: $root is no userland (userland.sh ensure RELEASE)"
  # ROOT becomes a mount of its own (with what the caller bound under it) and then "/" through
  # pivot_root, not chroot: Apptainer inside refuses a chroot ("weak chrooted environment"),
  # because joining its container's mount namespace would leave it.
  mount --rbind "$root" "$root"
  mount --bind /proc "$root/proc"
  mount --rbind /sys "$root/sys"
  mount --rbind /dev "$root/dev"
  mount --bind /tmp "$root/tmp"
  mkdir -p "$root$k_repo"
  mount --bind "$k_repo" "$root$k_repo"
  # Packages downloaded once serve every later install, also after the chroot is remade.
  if [[ -n ${DDP_USERLAND_APT_CACHE:-} ]]; then
    mount --bind "$DDP_USERLAND_APT_CACHE" "$root/var/cache/apt/archives"
  fi
  # Keep the caller's directory when it is one of the shared paths, so that relative paths
  # (cmake --build build-slurm-RELEASE) mean the same inside.
  local dir=/
  [[ -d $root$PWD ]] && dir=$PWD
  # pivot_root(2)'s own idiom: the old root lands on top of the new one and is detached.
  cd "$root"
  pivot_root . .
  umount -l .
  exec /usr/bin/env --chdir="$dir" "$@"
}

cmd_exec() {
  local release=$1 root; shift
  (($#)) || die "exec: no command given"
  root=$(cmd_root "$release") || die "exec: Slurm $release's userland is not made (userland.sh ensure $release)"
  if [[ $root == / ]]; then exec "$@"; fi
  exec unshare --mount --propagation private -- "$k_self" enter "$root" "$@"
}

# debootstrap a minimal system, then install the packages with apt inside it (apt resolves
# alternatives and virtual packages that debootstrap's own resolver does not).
make_chroot() {
  local suite=$1 root=$k_dir/$1 cache=$k_dir/apt-$1 url
  url=$(mirror)
  command -v debootstrap >/dev/null || die "debootstrap not found (install: bash contrib/install-deps.sh)"
  rm -rf "$root" "$k_dir/$suite.ready"
  mkdir -p "$cache/partial"
  say "making Debian $suite's userland in $root from $url (packages cached in $cache)"
  debootstrap --variant=minbase --cache-dir="$cache" "$suite" "$root" "$url" >"$k_dir/$suite.log" 2>&1 ||
    { tail -n 20 "$k_dir/$suite.log" >&2; die "debootstrap $suite failed (log: $k_dir/$suite.log)"; }
  echo "deb $url $suite main" >"$root/etc/apt/sources.list"
  # unstable's Release file is valid for a week only; a mirror snapshot older than that is still
  # what we want to install from.
  printf 'Acquire::Check-Valid-Until "false";\nAPT::Install-Recommends "false";\n' \
    >"$root/etc/apt/apt.conf.d/90ddp"
  # No service starts inside: the cluster runs its own daemons.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  install_packages "$suite" "installing packages into"
}

# apt-get installs the package list into SUITE's chroot (WHAT names the step in an error), then
# stamps the chroot as made with that list.
install_packages() {
  local suite=$1 what=$2 root=$k_dir/$1 cache=$k_dir/apt-$1 packages
  mapfile -t packages < <(suite_packages "$suite")
  DDP_USERLAND_APT_CACHE=$cache unshare --mount --propagation private -- "$k_self" enter "$root" \
    /bin/sh -c 'export DEBIAN_FRONTEND=noninteractive; apt-get update &&
      apt-get install -y -o Dpkg::Options::=--force-confold "$@"' sh "${packages[@]}" \
    >>"$k_dir/$suite.log" 2>&1 ||
    { tail -n 20 "$k_dir/$suite.log" >&2; die "$what $root failed (log: $k_dir/$suite.log)"; }
  # Packages are cached outside; lists are not needed once installed.
  rm -rf "$root"/var/lib/apt/lists/*_Packages
  stamp_text "$suite" >"$k_dir/$suite.ready"
}

# Debian's python3-torch 2.6 (Debian 13) and 2.14 (unstable) are built without libuv, and
# PyTorch asks TCPStore for libuv by default. USE_LIBUV=0 (which cluster.sh sets for such a
# userland, as a site must) turns it off for init_process_group's env://, but torchrun's static
# rendezvous, which `--ddp=torchrun` uses, and the agent-store client of its workers create their
# TCPStores without reading it (a PyTorch bug, fixed upstream by passing use_libuv on): torchrun
# fails on every node with "use_libuv was requested but PyTorch was built without libuv
# support". This applies that fix to the userland's torch; idempotent (a marker comment), and a
# no-op for a torch without those files. doc/slurm-releases.md tells sites with Debian's torch to do the same.
patch_torch() {
  local root=$1
  chroot "$root" /usr/bin/python3 - <<'PY'
import importlib.util, pathlib, re, sys
spec = importlib.util.find_spec("torch")
if spec is None or not spec.submodule_search_locations:
    sys.exit(0)
base = pathlib.Path(spec.submodule_search_locations[0]) / "distributed"
mark = "  # use_libuv: tests/cluster/userland.sh"
# The TCPStores created without use_libuv: the static rendezvous' (torchrun) and the agent-store
# client every torchrun worker makes in init_process_group.
edits = [
    (base / "elastic/rendezvous/static_tcp_rendezvous.py", r"^(\s*)multi_tenant=True,\n",
     'use_libuv=os.environ.get("USE_LIBUV", "1") == "1",', True),
    (base / "rendezvous.py", r"^(\s*)is_master=False,\n\s*timeout=timeout,\n",
     "use_libuv=use_libuv,", False),
]
for f, pattern, arg, needs_os in edits:
    if not f.exists():
        continue
    text = f.read_text()
    if mark in text:
        continue
    text, n = re.subn(pattern, lambda m: m.group(0) + m.group(1) + arg + mark + "\n", text, count=1, flags=re.M)
    if n != 1:
        sys.exit(f"userland.sh: cannot patch {f}: its TCPStore call is not found")
    if needs_os and not re.search(r"^import os$", text, flags=re.M):
        text = re.sub(r"^import ", "import os\nimport ", text, count=1, flags=re.M)
    f.write_text(text)
PY
}

# A chroot made with an older package list gets what the list adds, in place: faster than
# remaking it, and nothing it already holds changes.
top_up_chroot() {
  local suite=$1 cache=$k_dir/apt-$1
  say "adding the packages the list gained since Debian $suite's userland was made"
  mkdir -p "$cache/partial"
  install_packages "$suite" "adding packages to"
}

cmd_ensure() {
  local release=$1 suite root found
  suite=$(suite_of "$release")
  if root=$(cmd_root "$release"); then
    if [[ $root != / ]]; then patch_torch "$root" || die "patching torch in $root failed (above)"; fi
    echo "$root"
    return
  fi
  [[ $(id -u) -eq 0 ]] || die "ensure: making a chroot needs root"
  mkdir -p "$k_dir"
  exec 9>"$k_dir/$suite.lock"
  flock 9
  # Another `ensure` may have made it while we waited for the lock.
  if ! root=$(cmd_root "$release"); then
    local started=$SECONDS
    if [[ -x $k_dir/$suite/bin/sh && $(head -n1 "$k_dir/$suite.ready" 2>/dev/null) == "$suite" ]]; then
      top_up_chroot "$suite"
    else
      make_chroot "$suite"
    fi
    say "Debian $suite's userland made in $((SECONDS - started))s"
    root=$k_dir/$suite
  fi
  patch_torch "$root" || die "patching torch in $root failed (above)"
  found=$(chroot "$root" dpkg-query -W -f='${Version}' slurmctld | major_minor)
  if [[ $found != "$release" ]]; then
    # Exit status 3: the archive moved on (unstable takes each new Slurm release), not a failure
    # of this checkout; tests/run.sh reports that release as skipped, with this line.
    printf 'userland.sh: error: Debian %s now ships Slurm %s, not %s: update suite_of in %s\n' \
      "$suite" "$found" "$release" "$k_self" >&2
    exit 3
  fi
  echo "$root"
}

main() {
  local cmd=${1:-}
  (($#)) && shift
  case $cmd in
    host) host_release ;;
    suite) suite_of "${1:?usage: userland.sh suite RELEASE}" ;;
    root) cmd_root "${1:?usage: userland.sh root RELEASE}" ;;
    ensure) cmd_ensure "${1:?usage: userland.sh ensure RELEASE}" ;;
    exec) cmd_exec "$@" ;;
    enter) cmd_enter "$@" ;;
    remove)
      local suite; suite=$(suite_of "${1:?usage: userland.sh remove RELEASE}")
      rm -rf "${k_dir:?}/$suite" "$k_dir/$suite.ready" ;;
    *) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
}

main "$@"
