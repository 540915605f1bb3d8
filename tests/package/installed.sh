#!/usr/bin/env bash
# Installs the .deb packages from OUTDIR and runs the plugin's cluster tests against the
# installed files, not the build tree: the embedded cluster loads the packaged spank_ddp.so,
# ddp-check and ddpgen are the packaged ones, and the man pages and completion are where
# man and bash look. Removes the packages again unless DDP_KEEP_PACKAGES=1. Root.
#   installed.sh OUTDIR REPO
set -uo pipefail
out=$1 repo=$2
shopt -s nullglob
debs=("$out"/slurm-ddp-plugin_*.deb "$out"/slurm-ddp-gen_*.deb)
((${#debs[@]} == 2)) || { echo "SKIPPED: no .deb packages in $out (bash contrib/packaging/package.sh $out)"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "SKIPPED: installing packages needs root"; exit 77; }
for pkg in slurm-ddp-plugin slurm-ddp-gen; do
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    echo "SKIPPED: $pkg is already installed on this machine; not touching it"
    exit 77
  fi
done

cluster=$repo/tests/cluster/cluster.sh
cleanup() {
  "$cluster" down >/dev/null 2>&1
  [[ ${DDP_KEEP_PACKAGES:-0} == 1 ]] || dpkg --purge slurm-ddp-plugin slurm-ddp-gen >/dev/null
}
trap cleanup EXIT
# apt resolves the packages' dependencies (Slurm, the exact release) from the archive.
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${debs[@]}" >/dev/null ||
  { echo "FAIL: apt-get install of ${debs[*]}"; exit 1; }

arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
plugin=/usr/lib/$arch/slurm-wlm/spank_ddp.so
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
[[ $(dpkg -S "$plugin" 2>/dev/null) == "slurm-ddp-plugin: $plugin" ]] || fail "$plugin not from slurm-ddp-plugin"
[[ $(command -v ddpgen) == /usr/bin/ddpgen && $(command -v ddp-check) == /usr/bin/ddp-check ]] ||
  fail "ddpgen or ddp-check not installed in /usr/bin"
[[ $(command -v ddp-watch) == /usr/bin/ddp-watch ]] || fail "ddp-watch not installed in /usr/bin"
for page in spank_ddp.8 ddp-check.1 ddp-watch.1 ddpgen.1 ddpgen-job.5 ddpgen-profile.5; do
  [[ -f /usr/share/man/man${page##*.}/$page.gz ]] || fail "man page $page not installed"
done
# The installed ddpgen finds the installed profiles and schema, not the source tree's.
ddpgen profiles | grep -q '^puhti ' || fail "installed ddpgen lists no puhti profile"
cmp -s <(ddpgen schema job) /usr/share/slurm-ddp/schema/job.schema.json || fail "installed job schema differs from ddpgen schema job"
"$cluster" up --plugin "$plugin" || { echo "FAIL: cluster.sh up --plugin $plugin"; exit 1; }
# DDP_INSTALLED_RUN: the few cases that add nothing here but time skip, naming the ones that
# check the same installed files (covered_for_the_installed_files_by in tests/cluster/lib.bash).
export DDP_CHECK_BIN=/usr/bin/ddp-check DDPGEN=/usr/bin/ddpgen DDP_INSTALLED_RUN=1
for bats in plugin check; do
  "$repo/tests/cluster/run-bats.sh" "$repo/tests/cluster/$bats.bats" || fail "$bats.bats against the installed files"
done

# The installed snippet as Debian's plugstack.conf uses it (include plugstack.conf.d/*.conf)
# enables nothing; the same file with its one documented line uncommented enables --ddp.
# (The cluster reads its own plugstack.conf; the next srun sees a change.)
id=${DDP_CLUSTER_ID:-0}
state=${DDP_CLUSTER_DIR:-/tmp/ddp-cluster$( ((id == 0)) || echo "-$id")}
enabled=$(mktemp -d)
sed "s|^# optional $plugin$|optional $plugin|" /etc/slurm/plugstack.conf.d/ddp.conf >"$enabled/ddp.conf"
printf 'include /etc/slurm/plugstack.conf.d/*.conf\n' >"$state/etc/plugstack.conf"
if "$cluster" run srun --help | grep -q -- '--ddp'; then
  fail "the installed /etc/slurm/plugstack.conf.d/ddp.conf enables --ddp by itself"
fi
printf 'include %s/*.conf\n' "$enabled" >"$state/etc/plugstack.conf"
"$cluster" run srun --help | grep -q -- '--ddp' ||
  fail "uncommenting the required line of the installed ddp.conf does not enable --ddp"
"$cluster" run srun -N3 --ddp printenv RANK | sort | paste -sd' ' | grep -qx '0 1 2' ||
  fail "with the line enabled, srun -N3 --ddp does not give RANK 0 1 2"
rm -rf "$enabled"
((fails == 0)) || { echo "$fails check(s) failed"; exit 1; }
echo "installed packages: plugin and check cluster tests passed"
