#!/bin/bash
# One golden-file check of ddpgen. Usage: check.sh MODE DDPGEN CASE_DIR
#   render      the rendered script equals CASE_DIR/expected.sbatch exactly
#   bash-n      the rendered script parses (bash -n)
#   "shellcheck" the rendered script is clean at warning level (skipped, exit 77, without shellcheck)
#   error       ddpgen fails, prints nothing on stdout, and stderr equals CASE_DIR/expected.err;
#               CASE_DIR/args (optional) holds extra arguments, one per line
#   show        "ddpgen profile show PROFILE" prints CASE_DIR/expected.txt exactly
# Runs from CASE_DIR so that the header names "job.yaml" on every machine.
set -euo pipefail
mode=$1 ddpgen=$2 dir=$3
cd "$dir"
profile=$(<profile)
extra=()
if [[ -f args ]]; then mapfile -t extra < args; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

render() { "$ddpgen" --profile "$profile" job.yaml "${extra[@]}" > "$tmp/out.sbatch" 2> "$tmp/err"; }

case $mode in
  render)
    render
    diff -u expected.sbatch "$tmp/out.sbatch"
    ;;
  bash-n)
    render
    bash -n "$tmp/out.sbatch"
    ;;
  shellcheck)
    if ! command -v shellcheck > /dev/null; then
      echo "SKIP: shellcheck is not installed (apt-get install shellcheck)"
      exit 77
    fi
    render
    shellcheck -S warning "$tmp/out.sbatch"
    ;;
  show)
    "$ddpgen" profile show "$profile" > "$tmp/out.txt"
    diff -u expected.txt "$tmp/out.txt"
    ;;
  error)
    status=0
    render || status=$?
    if [[ $status -eq 0 ]]; then
      echo "ddpgen succeeded; expected the error in $dir/expected.err" >&2
      exit 1
    fi
    if [[ -s $tmp/out.sbatch ]]; then
      echo "ddpgen wrote to stdout although it failed" >&2
      exit 1
    fi
    diff -u expected.err "$tmp/err"
    ;;
  *)
    echo "unknown mode $mode" >&2
    exit 2
    ;;
esac
