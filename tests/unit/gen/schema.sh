#!/usr/bin/env bash
# The JSON Schemas `ddpgen schema job|profile` prints accept every shipped profile and example
# job, as python3-jsonschema reads them, and refuse a misspelt key as the strict reader does.
#   schema.sh DDPGEN REPO
set -euo pipefail
ddpgen=$1 repo=$2
# Debian's python3, which has python3-jsonschema and python3-yaml (a pyenv python3 may not).
py=/usr/bin/python3
"$py" -c 'import jsonschema, yaml' 2>/dev/null ||
  { echo "SKIPPED: python3-jsonschema or python3-yaml not installed (bash contrib/install-deps.sh)"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$ddpgen" schema job >"$work/job.schema.json"
"$ddpgen" schema profile >"$work/profile.schema.json"

# validate SCHEMA FILE...: prints "ok FILE" or "invalid FILE: reason" per file; exit 1 if any
# is invalid.
validate() {
  "$py" - "$@" <<'PY'
import json, sys, yaml, jsonschema, jsonschema.exceptions
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
bad = 0
for path in sys.argv[2:]:
    # BaseLoader: every scalar a string, as yaml-cpp hands them to the strict reader.
    doc = yaml.load(open(path), Loader=yaml.BaseLoader)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    if errors:
        bad = 1
        # best_match: inside an anyOf (a profile list or {add: ...}), the deepest cause.
        print(f"invalid {path}: {jsonschema.exceptions.best_match(errors).message}")
    else:
        print(f"ok {path}")
sys.exit(bad)
PY
}

shopt -s nullglob
profiles=("$repo"/site-profiles/*.yaml)
jobs=("$repo"/contrib/examples/*.yaml "$repo"/tests/cluster/sites/*/job.yaml)
for dir in "$repo"/tests/golden/*/; do
  [[ -f $dir/job.yaml && -f $dir/expected.sbatch ]] && jobs+=("$dir/job.yaml")
done
((${#profiles[@]} >= 9 && ${#jobs[@]} >= 10)) ||
  { echo "FAIL: found only ${#profiles[@]} profiles and ${#jobs[@]} jobs under $repo"; exit 1; }
validate "$work/profile.schema.json" "${profiles[@]}"
validate "$work/job.schema.json" "${jobs[@]}"

# A misspelt key fails in the schema and in ddpgen alike.
printf 'nodez: 2\ntime: "01:00:00"\nscript: train.py\n' >"$work/misspelt.yaml"
if out=$(validate "$work/job.schema.json" "$work/misspelt.yaml"); then
  echo "FAIL: the job schema accepted a misspelt key: $out"; exit 1
fi
echo "$out"
[[ $out == *"'nodez' was unexpected"* ]] || { echo "FAIL: not the misspelt key: $out"; exit 1; }
if "$ddpgen" validate --profile local "$work/misspelt.yaml" 2>"$work/err"; then
  echo "FAIL: ddpgen accepted the misspelt key"; exit 1
fi
grep -F 'unknown key "nodez" (did you mean "nodes"?)' "$work/err"

printf 'partitions:\n  - {name: gpu, max_nodez: 2}\n' >"$work/misspelt-profile.yaml"
if out=$(validate "$work/profile.schema.json" "$work/misspelt-profile.yaml"); then
  echo "FAIL: the profile schema accepted a misspelt nested key: $out"; exit 1
fi
echo "$out"
[[ $out == *"'max_nodez' was unexpected"* ]] || { echo "FAIL: not the misspelt key: $out"; exit 1; }
# preflight: true, false or a mapping; a share of the median below 1, as the reader wants.
printf 'time: "01:00:00"\nscript: t.py\npreflight: true\n' >"$work/preflight-on.yaml"
validate "$work/job.schema.json" "$work/preflight-on.yaml"
for bad in "yes" "{pairs: true, pairs_threshold: 1.5}" "{pair: true}"; do
  printf 'time: "01:00:00"\nscript: t.py\npreflight: %s\n' "$bad" >"$work/preflight.yaml"
  if out=$(validate "$work/job.schema.json" "$work/preflight.yaml"); then
    echo "FAIL: the job schema accepted preflight: $bad: $out"; exit 1
  fi
  if "$ddpgen" validate --profile local "$work/preflight.yaml" 2>/dev/null; then
    echo "FAIL: ddpgen accepted preflight: $bad"; exit 1
  fi
done
echo "schemas: ${#profiles[@]} profiles and ${#jobs[@]} jobs valid; misspelt keys refused"
