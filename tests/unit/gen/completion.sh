#!/usr/bin/env bash
# Drives ddpgen's bash completion as bash does (COMP_WORDS, COMP_CWORD, then the function) and
# asserts the candidate lists: subcommands, options, profile names found on the profile path,
# job keys for --set.
#   completion.sh DDPGEN COMPLETION_DIR
set -uo pipefail
ddpgen=$1
# shellcheck source=/dev/null
source "$2/ddpgen.bash"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/profiles" "$work/cwd"
printf 'description: a test site\npartitions: [{name: gpu}]\n' >"$work/profiles/zz-testsite.yaml"
export DDPGEN_PROFILE_PATH=$work/profiles
fails=0

# complete WORDS...: the candidates for the last word, sorted, space-separated.
complete_words() {
  COMP_WORDS=("$ddpgen" "$@")
  COMP_CWORD=$#
  COMPREPLY=()
  _ddpgen
  printf '%s\n' "${COMPREPLY[@]}" | sort | paste -sd' '
}

expect() {
  local want=$1
  shift
  local got
  got=$(complete_words "$@")
  if [[ $got == "$want" ]]; then
    echo "ok: ddpgen $* -> $got"
  else
    echo "FAIL: ddpgen $*"
    echo "  want: $want"
    echo "  got:  $got"
    fails=$((fails + 1))
  fi
}

cd "$work/cwd" || exit 1
expect "profile profiles" "pro"
expect "--profile" "--pro"
expect "schema" "sch"
expect "job profile" schema ""
expect "--help --keys" schema --
expect "init show" profile ""
expect "--live" validate --li
expect "schema status submit" "s"
expect "logs" "lo"
expect "--follow" submit --fo
expect "--no-live" submit --no
expect "--parsable" submit --pa
expect "zz-testsite" submit --profile zz
expect "--follow" logs --fo
expect "--help" status --
expect "--name" profile init --na
expect "zz-testsite" --profile zz
expect "zz-testsite" validate --profile zz
expect "zz-testsite" profile show zz
expect "checkpoint.dir= checkpoint.max_restarts= checkpoint.requeue= checkpoint.requeue_on_failure= checkpoint.signal= checkpoint.signal_time= checkpoint=" --set check
expect "nodes=" --profile local job.yaml --set nod
expect "accelerate.config_file= accelerate.options= accelerate= account= activate.conda= activate.source= activate.venv= activate=" --set ac
expect "container.image= container.mounts= container.runtime= container.workdir= container=" --set cont
expect "task_prefix=" --set task
# the installed profiles are found too (the build tree's, for a build-tree ddpgen)
expect "lumi" --profile lu
# a path completes as a file
printf 'time: 1\n' >"$work/cwd/myjob.yaml"
expect "myjob.yaml" --profile local my
expect "myjob.yaml" submit --profile local my
((fails == 0)) || { echo "$fails completion check(s) failed"; exit 1; }
echo "bash completion: all checks passed"
