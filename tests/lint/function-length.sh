#!/bin/bash
# Proves that tests/lint/function-length.py can fail: a 70-line function is reported by name,
# the limit is exact (60 passes, 61 fails), braces in strings, comments and initialisers are
# not counted, and the allow-list accepts only entries with a reason that are still needed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
lint=("${1:-/usr/bin/python3}" "$here/function-length.py")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# expect RC SUBSTRING ARGS...: the lint exits RC and prints SUBSTRING.
expect() {
  local want_rc=$1 want_text=$2 rc
  shift 2
  "${lint[@]}" "$@" >"$work/out" 2>&1
  rc=$?
  if [[ $rc -ne $want_rc ]] || ! grep -qF -- "$want_text" "$work/out"; then
    echo "FAIL: function-length.py $* exited $rc (expected $want_rc) without \"$want_text\":"
    sed 's/^/  | /' "$work/out"
    failures=$((failures + 1))
  fi
}

# body LINES: a function whose body is LINES lines.
body() {
  echo "int f(int x) {"
  for ((k = 1; k < $1; k++)); do echo "  x += $k;"; done
  echo "  return x;"
  echo "}"
}

cd "$here/fixtures" || exit 1
expect 1 "long_function.cpp:2: too_long is 70 lines long (at most 60)" long_function.cpp
expect 1 "1 problems" long_function.cpp
expect 0 "8 functions checked, 0 problems" tricky.cpp
"${lint[@]}" --list tricky.cpp >"$work/list"
cat >"$work/want" <<'LIST'
tricky.cpp:19: braces_in_text 4
tricky.cpp:29: Widget 0
tricky.cpp:31: size 0
tricky.cpp:34: scaled 1
tricky.cpp:44: with_lambda 2
tricky.cpp:53: c_entry 1
tricky.cpp:60: declared_only 1
tricky.cpp:65: last 1
LIST
if ! diff -u "$work/want" <(grep -v '^function-length:' "$work/list"); then
  echo "FAIL: the functions of tricky.cpp and their lengths differ from the above"
  failures=$((failures + 1))
fi

body 60 >"$work/sixty.cpp"
body 61 >"$work/sixty-one.cpp"
expect 0 "1 functions checked, 0 problems" --root "$work" sixty.cpp
expect 1 "sixty-one.cpp:1: f is 61 lines long (at most 60)" --root "$work" sixty-one.cpp
expect 0 "0 problems" --max 70 long_function.cpp

echo "long_function.cpp too_long a fixture, kept long on purpose" >"$work/allow"
expect 0 "0 problems" --allow "$work/allow" long_function.cpp
echo "long_function.cpp too_long" >"$work/no-reason"
expect 1 "expected PATH FUNCTION REASON" --allow "$work/no-reason" long_function.cpp
echo "long_function.cpp short_one not long at all" >>"$work/allow"
expect 1 "long_function.cpp short_one is not longer than 60 lines (or is gone): remove the entry" \
  --allow "$work/allow" long_function.cpp

if [[ $failures -ne 0 ]]; then
  echo "$failures checks of the function-length lint failed"
  exit 1
fi
echo "function-length lint: all checks passed"
