#!/usr/bin/python3
"""Fails when a C++ function body is longer than a screen (STYLE.md: about 60 lines).

usage: function-length.py [--max N] [--allow FILE] [--root DIR] [--list] PATH...

PATHs are files or folders (searched for .cpp, .hpp, .h, .cc) relative to --root. A body's
length is the number of lines strictly between its braces, blank and comment lines included:
what a reader has to scroll through. The allow-list names justified exceptions, one a line:

    RELATIVE/PATH.cpp FUNCTION REASON...

A line without a reason, and an entry whose function is no longer too long (or gone), are
errors too, so that the list only shrinks. The scan is a brace matcher over the source with
comments, strings and preprocessor lines blanked out, not a C++ parser: it knows namespaces,
classes, extern "C" blocks, initialisers and constructor initialiser lists, which is what this
project writes.
"""

import argparse
import os
import re
import sys

EXTENSIONS = (".cpp", ".hpp", ".h", ".cc")
QUALIFIERS = re.compile(
    r"\s*(?:\b(?:const|noexcept|override|final|mutable|volatile)\b|&&|&|->[^;{}]*|"
    r"\bnoexcept\s*\([^()]*\))\s*$"
)


def blank(text):
    """`text` with comments, string and character literals and preprocessor lines replaced by
    spaces; newlines are kept so that offsets still give line numbers."""
    out = list(text)
    i, n = 0, len(text)

    def wipe(start, end):
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            end = i
            while end < n and (text[end] != "\n" or text[end - 1] == "\\"):
                end += 1
            wipe(i, end)
            i = end
            continue
        if c == "\n":
            at_line_start = True
            i += 1
            continue
        if not c.isspace():
            at_line_start = False
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            wipe(i, end)
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            wipe(i, end)
            i = end
        elif c == "R" and text.startswith('"', i + 1) and not (text[i - 1 : i].isalnum()):
            delim_end = text.find("(", i + 2)
            delim = text[i + 2 : delim_end]
            end = text.find(")" + delim + '"', delim_end)
            end = n if end < 0 else end + len(delim) + 2
            wipe(i + 2, end - 1)
            i = end
        elif c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and text[i - 1 : i].isalnum() and text[i + 1 : i + 2].isalnum():
                i += 1
                continue
            end = i + 1
            while end < n and text[end] != c and text[end] != "\n":
                end += 2 if text[end] == "\\" else 1
            wipe(i + 1, end)
            i = end + 1
        else:
            i += 1
    return "".join(out)


def matching(text, open_at):
    """Offset of the brace closing the one at `open_at`."""
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(text) - 1


def top_level_paren(header):
    """Offset of the first '(' outside template angle brackets, or -1."""
    angle = 0
    for k, c in enumerate(header):
        if c == "<":
            angle += 1
        elif c == ">" and angle > 0 and header[k - 1] != "-":
            angle -= 1
        elif c == "(" and angle == 0:
            return k
    return -1


def strip_qualifiers(header):
    previous = None
    while previous != header:
        previous = header
        header = QUALIFIERS.sub("", header).rstrip()
    return header


def classify(header):
    """'function', 'container' (scan inside), 'init' (a brace inside a constructor's
    initialiser list) or 'other' (skip it whole) for the text before a '{'."""
    h = header.strip()
    core = strip_qualifiers(h)
    paren = top_level_paren(core)
    if re.search(r"\)\s*:[^:]", core) and re.search(r"[\w>]$", core) and paren >= 0:
        return "init"
    if core.endswith(")") and paren >= 0 and not re.search(r"(^|[^=!<>])=[^=]", core[:paren]):
        return "function"
    if re.search(r"\benum\b", h):
        return "other"
    if re.search(r'\bnamespace\b|\bextern\s*"', h) or re.search(r"\b(class|struct|union)\b", h):
        return "other" if "=" in h else "container"
    return "other"


def function_name(header):
    core = strip_qualifiers(header.strip())
    paren = top_level_paren(core)
    match = re.search(r"(operator\s*\S+?|~?[\w:~]+)\s*$", core[:paren])
    return match.group(1).replace(" ", "") if match else "?"


def functions(source):
    """(name, first line, body lines) of every function defined in `source`."""
    text = blank(source)
    found = []
    header_start = 0
    i = 0
    while i < len(text):
        c = text[i]
        if c in ";}":
            header_start = i + 1
        elif c == "{":
            kind = classify(text[header_start:i])
            if kind == "container":
                header_start = i + 1
            elif kind == "init":
                i = matching(text, i)  # the header goes on: more initialisers, then the body
            else:
                end = matching(text, i)
                if kind == "function":
                    first = text.count("\n", 0, i) + 1
                    last = text.count("\n", 0, end) + 1
                    found.append((function_name(text[header_start:i]), first, max(0, last - first - 1)))
                i = end
                header_start = end + 1
        i += 1
    return found


def sources(root, paths):
    for path in paths:
        full = os.path.join(root, path)
        if os.path.isfile(full):
            yield path
            continue
        if not os.path.isdir(full):
            raise SystemExit(f"function-length: {path}: no such file or folder")
        for folder, dirs, files in os.walk(full):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(EXTENSIONS):
                    yield os.path.relpath(os.path.join(folder, name), root)


def read_allow(path):
    allowed, errors = {}, []
    if not path:
        return allowed, errors
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split(None, 2)
            if len(fields) < 3:
                errors.append(f"{path}:{number}: expected PATH FUNCTION REASON, got \"{line}\"")
                continue
            allowed[(fields[0], fields[1])] = number
    return allowed, errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=60)
    parser.add_argument("--allow")
    parser.add_argument("--root", default=".")
    parser.add_argument("--list", action="store_true", help="print every function and its length")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()

    allowed, errors = read_allow(args.allow)
    used = set()
    checked = 0
    for path in sources(args.root, args.paths):
        with open(os.path.join(args.root, path), encoding="utf-8") as f:
            for name, line, length in functions(f.read()):
                checked += 1
                if args.list:
                    print(f"{path}:{line}: {name} {length}")
                if length <= args.max:
                    continue
                if (path, name) in allowed:
                    used.add((path, name))
                    continue
                errors.append(
                    f"{path}:{line}: {name} is {length} lines long (at most {args.max}); split it "
                    f"into named steps, or list it in the allow-list with the reason"
                )
    for (path, name), number in sorted(allowed.items(), key=lambda item: item[1]):
        if (path, name) not in used:
            errors.append(
                f"{args.allow}:{number}: {path} {name} is not longer than {args.max} lines "
                f"(or is gone): remove the entry"
            )
    for error in errors:
        print(f"function-length: {error}")
    print(f"function-length: {checked} functions checked, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
