#!/usr/bin/env bash
# Builds slurm-ddp's packages from the tree's tracked files (build outputs and untracked files
# never get in) into OUTDIR:
#   slurm-ddp-plugin_*.deb, slurm-ddp-gen_*.deb   for the Debian release this runs on
#   slurm-ddp-plugin-*.rpm, slurm-ddp-gen-*.rpm   from contrib/packaging/rpm/slurm-ddp.spec (rpmbuild)
#   slurm-ddp-VERSION.tar.gz                      the source they were built from
# Usage: bash contrib/packaging/package.sh OUTDIR     (DDP_PACKAGE_FORMATS="deb rpm" picks formats)
# DDP_PACKAGE_DEBUG_FLAGS replaces the distributions' -g in both builds (the test suite passes
# -g1: line tables only, the same code, about a third less compile time; released packages keep
# full debug information). DDP_PACKAGE_NOOPT=1 compiles both without optimization (-O0; Debian's
# DEB_BUILD_OPTIONS=noopt): for the test suite, whose package tests check the packaging (files,
# dependencies, install, the plugin loaded from them), in 40% less compile time; the code's
# optimized build is tested everywhere else.
# Needs: dpkg-dev, debhelper, fakeroot, rpm, and the build dependencies (contrib/install-deps.sh).
# The plugin packages require the Slurm release whose headers they were built against.
set -euo pipefail

die() { printf 'package.sh: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'package.sh: %s\n' "$*"; }

[[ $# -eq 1 ]] || die "usage: bash contrib/packaging/package.sh OUTDIR"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
formats=${DDP_PACKAGE_FORMATS:-deb rpm}
jobs=$(nproc)

version=$(sed -n 's/^project(slurm-ddp VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
[[ -n $version ]] || die "no project(slurm-ddp VERSION ...) in CMakeLists.txt"
changelog=$(sed -n '1s/^slurm-ddp (\([^)]*\)).*/\1/p' "$root/contrib/packaging/debian/changelog")
[[ $changelog == "$version" ]] ||
  die "contrib/packaging/debian/changelog says $changelog, CMakeLists.txt $version: add a changelog entry"
release=$(sh "$root/contrib/packaging/slurm-release.sh") || die "cannot tell the Slurm release (libslurm-dev)"
next=$(sh "$root/contrib/packaging/slurm-release.sh" --next)

need() { command -v "$1" >/dev/null || die "$1 not found (install: $2; or bash contrib/install-deps.sh)"; }
[[ $formats != *deb* ]] || { need dpkg-buildpackage dpkg-dev; need dh debhelper; need fakeroot fakeroot; }
[[ $formats != *rpm* ]] || need rpmbuild rpm

work=$(mktemp -d /tmp/slurm-ddp-package.XXXXXX)
trap 'rm -rf "$work"' EXIT
name=slurm-ddp-$version

# The source: tracked files with their current contents, as a tarball with one top directory.
say "source $name.tar.gz (Slurm $release)"
mkdir -p "$work/src/$name"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$root" ls-files -z | (cd "$root" && tar --null -T - -cf -) | tar -xf - -C "$work/src/$name"
else
  tar -C "$root" --exclude='./build*' --exclude=./.cluster -cf - . | tar -xf - -C "$work/src/$name"
fi
tar -C "$work/src" --owner=0 --group=0 --sort=name -czf "$out/$name.tar.gz" "$name"

if [[ $formats == *deb* ]]; then
  started=$SECONDS
  cp -a "$work/src/$name" "$work/deb-$name"
  cp -a "$root/contrib/packaging/debian" "$work/deb-$name/debian"
  say "dpkg-buildpackage -b ($(. /etc/os-release && echo "$PRETTY_NAME"))"
  (cd "$work/deb-$name" && DEB_BUILD_OPTIONS="parallel=$jobs nocheck${DDP_PACKAGE_NOOPT:+ noopt}" \
    DEB_CXXFLAGS_APPEND="${DDP_PACKAGE_DEBUG_FLAGS:-}" dpkg-buildpackage -us -uc -b >"$work/deb.log" 2>&1) ||
    { tail -40 "$work/deb.log" >&2; die "dpkg-buildpackage failed (log above)"; }
  cp "$work"/*.deb "$out/"
  say "deb: $(cd "$out" && ls ./*.deb | paste -sd' ') in $((SECONDS - started)) s"
fi

if [[ $formats == *rpm* ]]; then
  started=$SECONDS
  mkdir -p "$work/rpm/SOURCES"
  cp "$out/$name.tar.gz" "$work/rpm/SOURCES/"
  say "rpmbuild -bb --nodeps (build dependencies are Debian's here, not checked by rpm)"
  rpmbuild -bb --nodeps --define "_topdir $work/rpm" --define "ddp_version $version" \
    --define "slurm_release $release" --define "slurm_next $next" \
    --define "_smp_mflags -j$jobs" \
    ${DDP_PACKAGE_DEBUG_FLAGS:+--define "ddp_debug_flags $DDP_PACKAGE_DEBUG_FLAGS"} \
    ${DDP_PACKAGE_NOOPT:+--define "ddp_opt_flags -O0"} "$root/contrib/packaging/rpm/slurm-ddp.spec" >"$work/rpm.log" 2>&1 ||
    { tail -40 "$work/rpm.log" >&2; die "rpmbuild failed (log above)"; }
  find "$work/rpm/RPMS" -name '*.rpm' -exec cp {} "$out/" \;
  say "rpm: $(cd "$out" && ls ./*.rpm | paste -sd' ') in $((SECONDS - started)) s"
fi
say "packages in $out"
