#!/usr/bin/env bash
# What contrib/packaging/package.sh built is what a site should get: lintian finds no errors in the
# .debs (warnings are printed), each package holds exactly its node's files, the plugin
# requires the Slurm release it was built for, and the plugstack snippet enables nothing.
#   check-packages.sh OUTDIR REPO
set -uo pipefail
out=$1 repo=$2
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

shopt -s nullglob
plugin_deb=("$out"/slurm-ddp-plugin_*.deb) gen_deb=("$out"/slurm-ddp-gen_*.deb)
plugin_rpm=("$out"/slurm-ddp-plugin-*.rpm) gen_rpm=("$out"/slurm-ddp-gen-*.rpm)
((${#plugin_deb[@]} == 1 && ${#gen_deb[@]} == 1)) ||
  { echo "SKIPPED: no packages in $out (run: bash contrib/packaging/package.sh $out)"; exit 77; }
release=$(sh "$repo/contrib/packaging/slurm-release.sh") next=$(sh "$repo/contrib/packaging/slurm-release.sh" --next)

# contains LISTING PATH...: each PATH is a line of LISTING
contains() {
  local listing=$1 path
  shift
  for path; do grep -qxF "$path" <<<"$listing" || fail "$path missing from the package"; done
}

if command -v lintian >/dev/null; then
  report=$(lintian --tag-display-limit 0 "${plugin_deb[0]}" "${gen_deb[0]}" 2>&1)
  echo "lintian: $(grep -c '^E:' <<<"$report") error(s), $(grep -c '^W:' <<<"$report") warning(s)"
  grep -E '^[EW]:' <<<"$report"
  ! grep -q '^E:' <<<"$report" || fail "lintian reports errors"
else
  echo "lintian not installed: not run"
fi

list=$(dpkg-deb -c "${plugin_deb[0]}" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$')
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
contains "$list" "/usr/lib/$arch/slurm-wlm/spank_ddp.so" /etc/slurm/plugstack.conf.d/ddp.conf \
  /usr/bin/ddp-check /usr/share/man/man8/spank_ddp.8.gz /usr/share/man/man1/ddp-check.1.gz \
  /usr/bin/ddp-watch /usr/share/man/man1/ddp-watch.1.gz
! grep -q ddpgen <<<"$list" || fail "the plugin package holds ddpgen files"
depends=$(dpkg-deb -f "${plugin_deb[0]}" Depends)
echo "slurm-ddp-plugin Depends: $depends"
[[ $depends == *"slurm-wlm-basic-plugins (>= $release), slurm-wlm-basic-plugins (<< $next~)"* ]] ||
  fail "the plugin package does not require Slurm $release exactly"
# The snippet documents the plugin and enables nothing: no active plugstack line.
snippet=$(dpkg-deb --fsys-tarfile "${plugin_deb[0]}" | tar -xOf - ./etc/slurm/plugstack.conf.d/ddp.conf)
active=$(grep -Ev '^[[:space:]]*(#|$)' <<<"$snippet")
[[ -z $active ]] || fail "the plugstack snippet enables something: $active"
grep -qxF "# optional /usr/lib/$arch/slurm-wlm/spank_ddp.so" <<<"$snippet" ||
  fail "the snippet lacks the commented line that enables the plugin"

list=$(dpkg-deb -c "${gen_deb[0]}" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$')
contains "$list" /usr/bin/ddpgen /usr/share/slurm-ddp/site-profiles/local.yaml \
  /usr/share/slurm-ddp/templates/sbatch.sh.mustache /usr/share/slurm-ddp/templates/task-setup.sh \
  /usr/share/slurm-ddp/schema/job.schema.json \
  /usr/share/slurm-ddp/schema/profile.schema.json /usr/share/bash-completion/completions/ddpgen \
  /usr/share/zsh/vendor-completions/_ddpgen /usr/share/man/man1/ddpgen.1.gz \
  /usr/share/man/man5/ddpgen-job.5.gz /usr/share/man/man5/ddpgen-profile.5.gz
! grep -qE 'spank_ddp|ddp-check|ddp-watch' <<<"$list" || fail "the generator package holds plugin files"

if command -v rpm >/dev/null && ((${#plugin_rpm[@]} == 1 && ${#gen_rpm[@]} == 1)); then
  list=$(rpm -qlp "${plugin_rpm[0]}" 2>/dev/null)
  echo "rpm -qlp ${plugin_rpm[0]##*/}:"
  sed 's/^/  /' <<<"$list"
  contains "$list" /usr/lib64/slurm/spank_ddp.so /etc/slurm/plugstack.conf.d/ddp.conf \
    /usr/bin/ddp-check /usr/bin/ddp-watch
  requires=$(rpm -qp --requires "${plugin_rpm[0]}" 2>/dev/null)
  contains "$requires" "slurm >= $release" "slurm < $next"
  list=$(rpm -qlp "${gen_rpm[0]}" 2>/dev/null)
  echo "rpm -qlp ${gen_rpm[0]##*/}: $(wc -l <<<"$list") files"
  contains "$list" /usr/bin/ddpgen /usr/share/slurm-ddp/site-profiles/local.yaml \
    /usr/share/bash-completion/completions/ddpgen /usr/share/zsh/site-functions/_ddpgen
else
  fail "no .rpm packages in $out (or rpm not installed)"
fi
((fails == 0)) || { echo "$fails check(s) failed"; exit 1; }
echo "packages as intended"
