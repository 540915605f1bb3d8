#!/usr/bin/python3
"""Property test of how ddpgen passes job and profile values into the script.

For each case one or two string fields of a job file or of a site profile get a random value
(quotes, $, backticks, ${...}, newlines, control characters, unicode, shell syntax). ddpgen
must either refuse it (exit 1, nothing on stdout, one "ddpgen: error: FILE:..." line), or
render a script that, run by bash with stub commands first on a PATH holding nothing else,
  - runs exactly the commands of the same case with plain values, in the same order (a value
    never becomes code: no command added, none swallowed; a command bash cannot find is
    reported by command_not_found_handle and fails the case),
  - hands the value byte for byte to the command it is meant for (an argument of srun, of the
    program, of module, mkdir or the container runtime, or a variable in srun's environment;
    a site variable as bash expands $NAME, ${NAME} and ${NAME:+TEXT}),
  - writes #SBATCH values as one exact line each, all before the first command (sbatch
    ignores every #SBATCH after it).
Comment-only fields (description, notes, ...) must change no command at all. In the fields
that take run-time references (args, env values, output, error, checkpoint.dir, container.*,
the script, task_prefix, srun options, a job's modules and activate; in the script, the first
word of python and task_prefix, activate, checkpoint.dir and the container's image and mounts a
leading ~ is ${HOME}),
and a sweep's values (which task 0 exports as SWEEP_P and passes on through ${SWEEP_P}),
${NAME} of an allowed name arrives expanded as the batch shell has it (--output and --error as
sbatch's %j, %x, ... patterns) and every other byte as written; pre: and post: are code by
design and not drawn.

Usage: property.py DDPGEN [--cases N] [--seed S] [--jobs J]. Prints the number of cases,
how many were refused and accepted, and the time taken. Exit status 1 on the first broken
case, with the value, the files and the log of what ran.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

STUB = r'''#!/bin/bash
# Records this command: its name, its arguments and every exported variable, NUL-separated.
name=${0##*/}
# One record at a time: commands of a pipeline run at once (flock by its full path: the script
# under test finds nothing but the stubs on its PATH).
exec 9>>"$REC_LOG"
/usr/bin/flock 9
{
  printf 'CMD\0%s\0%s\0' "$name" "$#"
  if (($#)); then printf '%s\0' "$@"; fi
  mapfile -t names < <(compgen -e)
  printf '%s\0' "${#names[@]}"
  for v in "${names[@]}"; do printf '%s=%s\0' "$v" "${!v}"; done
} >&9
exec 9>&-
runnable() { case $1 in bash | apptainer | singularity | torchrun | python3 | accelerate | fairseq-train | numactl) return 0 ;; esac; return 1; }
case $name in
  srun)
    while [[ $# -gt 0 && $1 == -* ]]; do shift; done
    export SLURM_STEP_ID=0 SLURM_NODEID=0 SLURM_PROCID=0 SLURM_LOCALID=0
    export SLURM_STEP_NODELIST='node[01-02]' SLURM_JOB_NODELIST='node[01-02]'
    export SLURM_NNODES=2 SLURM_STEP_NUM_NODES=2 SLURM_NTASKS=4 SLURM_STEP_NUM_TASKS=4
    if runnable "$1"; then exec "$@"; fi ;;
  apptainer | singularity)
    shift
    while [[ $1 == -* ]]; do
      if [[ $1 == --bind || $1 == --pwd ]]; then shift; fi
      shift
    done
    shift
    if runnable "$1"; then exec "$@"; fi ;;
  numactl)
    # Its options (task_prefix's words) are drawn at random: skip to the wrapped command.
    while [[ $# -gt 0 ]] && ! runnable "$1"; do shift; done
    if [[ $# -gt 0 ]]; then exec "$@"; fi ;;
  conda)
    exit 0 ;;
esac
exit 0
'''
NOT_FOUND = '() { printf "NOTFOUND\\0%s\\0" "$1" >> "$REC_LOG"; return 127; }'
COMMANDS = ["srun", "module", "mkdir", "rm", "scontrol", "sleep", "apptainer", "singularity",
            "torchrun", "python3", "accelerate", "fairseq-train", "sbatch", "head", "numactl",
            "conda"]
# Variables a site value may reference, as the batch shell sees them; PT_VAR is a variable the
# profile declares (variables:), which job values may reference as ${PT_VAR}.
BATCH_ENV = {"DDPT_SET": "v a'l $x", "DDPT_EMPTY": "", "USER": "u s'r", "PT_VAR": "p $v`"}
K_JOB_ID = "4242"

# --- Random values ---------------------------------------------------------------------------

FRAGMENTS = [
    "'", '"', "$", "`", "\\", "${", "}", "{", "$(", ")", "(", ";", "|", "&", "&&", "*", "?",
    "[", "]", "~", "#", "!", "%", "=", ",", ":", "-", "--", " ", "  ", "\n", "\t", "\r",
    "\x01", "\x1b[31m", "\x7f", "é", "日本", "\u2028", "\U0001F600", "\u00a0", "\u0085",
    "a", "b0", "x_y", "/p/q", "..", "touch PWNED", "$(touch PWNED)", "`touch PWNED`",
    "; touch PWNED #", "'; touch PWNED; '", "\"; touch PWNED; \"", "${IFS}", "$HOME", "$1",
    "$$", "$DDPT_SET", "${DDPT_SET}", "${DDPT_EMPTY}", "${DDPT_UNSET}", "${DDPT_SET:+",
    "${DDPT_EMPTY:+", "${DDPT_UNSET:+", ":+", "${DDPT_SET:-x}", "<<EOF", "\\n", "%j",
    "${SLURM_JOB_ID}", "${USER}", "${PT_VAR}", "${PT_JOB}", "${SLURM_PROCID}", "${HOME}",
    "${SLURM_ARRAY_TASK_ID}", "${SLURM_JOB_NAME}", "${DDPT_UNSET:-d e}", "${DDPT_EMPTY:-}",
    "$${lr}", "$${", "~/",
]
# Run-time references: what the batch shell expands, and sbatch's patterns for #SBATCH files.
FILE_PATTERNS = {"SLURM_JOB_ID": "%j", "SLURM_JOBID": "%j", "SLURM_ARRAY_JOB_ID": "%A",
                 "SLURM_ARRAY_TASK_ID": "%a", "SLURM_JOB_NAME": "%x", "USER": "%u",
                 "SLURM_JOB_USER": "%u"}


def random_value(rng, var_heavy=False):
    """A string built from hostile fragments (var_heavy: mostly ${NAME:+...} shapes)."""
    if rng.random() < 0.05:
        return ""
    if var_heavy and rng.random() < 0.6:
        inner = "".join(rng.choice(FRAGMENTS + ["a", "b", ":", "/"]) for _ in range(rng.randint(0, 4)))
        name = rng.choice(["DDPT_SET", "DDPT_EMPTY", "DDPT_UNSET"])
        closing = "}" if rng.random() < 0.9 else ""
        return (rng.choice(["", "/x", "a b"]) + "${" + name + ":+" + inner + closing +
                rng.choice(["", "$DDPT_SET", "tail", "'"]))
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 6)))


def expand_site(value, env):
    """What bash makes of a site-profile value with the variables env: $NAME, ${NAME} and
    ${NAME:+TEXT} expand; everything else is literal."""
    text, _ = _expand(value, 0, env, inside=False)
    return text


PLAIN = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@% ")


def expand_refs(value, env, patterns=False):
    """A job value with its ${NAME} and ${NAME:-TEXT} (TEXT plain) references expanded from env
    (or, with patterns, ${NAME} replaced by sbatch's filename patterns); every other character as
    written."""
    out, i = [], 0
    while i < len(value):
        if not patterns and value.startswith("$${", i):
            out.append("${")
            i += 3
            continue
        if value.startswith("${", i):
            name = _name_at(value, i + 2)
            end = i + 2 + len(name)
            if name and value[end:end + 1] == "}" and len(name) == end - i - 2:
                out.append(FILE_PATTERNS.get(name, "?") if patterns else env.get(name, ""))
                i = end + 1
                continue
            close = value.find("}", end)
            if (name and not patterns and value[end:end + 2] == ":-" and close > 0 and
                    set(value[end + 2:close]) <= PLAIN):
                out.append(env.get(name, "") or value[end + 2:close])
                i = close + 1
                continue
        out.append(value[i])
        i += 1
    return "".join(out)


def _name_at(value, j):
    k = j
    if k < len(value) and value[k].isascii() and (value[k].isalpha() or value[k] == "_"):
        k += 1
        while k < len(value) and value[k].isascii() and (value[k].isalnum() or value[k] == "_"):
            k += 1
    return value[j:k]


def _expand(value, i, env, inside):
    """Expands from i to the end, or (inside) to the "}" closing a ${NAME:+; returns the text
    and the index after it."""
    out = []
    while i < len(value):
        c = value[i]
        if inside and c == "}":
            return "".join(out), i + 1
        if c == "$" and value[i + 1:i + 2] == "{":
            name = _name_at(value, i + 2)
            end = i + 2 + len(name)
            if name and value[end:end + 1] == "}":
                out.append(env.get(name, ""))
                i = end + 1
                continue
            if name and value[end:end + 2] == ":+":
                inner, i = _expand(value, end + 2, env, inside=True)
                out.append(inner if env.get(name, "") else "")
                continue
        if c == "$":
            name = _name_at(value, i + 1)
            if name:
                out.append(env.get(name, ""))
                i += 1 + len(name)
                continue
        out.append(c)
        i += 1
    return "".join(out), i


# --- YAML ------------------------------------------------------------------------------------

def q(text):
    """text as a YAML double-quoted scalar that decodes to exactly text."""
    out = ['"']
    for ch in text:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20 or 0x7f <= o <= 0x9f or o in (0x2028, 0x2029, 0xfeff):
            out.append("\\u%04x" % o)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def yaml_of(value, indent=""):
    if isinstance(value, dict):
        return "{" + ", ".join(f"{q(k)}: {yaml_of(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(yaml_of(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return q(value)


def document(mapping):
    return "".join(f"{k}: {yaml_of(v)}\n" for k, v in mapping.items())


# --- The cases -------------------------------------------------------------------------------

def base_profile(kind):
    p = {
        "description": "property test site",
        "notes": ["a note"],
        "sources": ["a source"],
        "account": {"required": False, "hint": "<account>"},
        "ddp_plugin": kind == "plugin",
        "node": {"gpus": 2, "gpu_type": "v100", "cores": 8},
        "partitions": [{"name": "gpu", "description": "the partition", "constraint": "ib",
                        "max_nodes": 4, "max_time": "2:00:00", "sbatch": ["--exclusive"]}],
        "cpus_per_gpu": 2,
        "sbatch": ["--hint=nomultithread"],
        "module_use": ["/site/modules"],
        "modules": ["site/1"],
        "env": {"PT_SITE": "/opt/lib${DDPT_SET:+:$DDPT_SET}"},
        "container": {"runtimes": ["pyxis" if kind == "pyxis" else "apptainer"],
                      "binds": ["/scratch"], "modules": ["apptainer-mod"]},
        "local_scratch": "$TMPDIR",
        "python": "python3",
        "port_range": "20000-30999",
        "variables": ["PT_VAR"],
    }
    return p


def base_job(kind):
    j = {
        "name": "pt",
        "nodes": 1,
        "time": "30:00",
        "launcher": "srun",
        "script": "train.py",
        "args": ["--a", "b c"],
        "account": "proj_1",
        "env": {"PT_JOB": "job value"},
        "modules": ["job/2"],
        "checkpoint": {"dir": "ck", "requeue": True},
        "output": "out-%j.log",
        "error": "err-%j.log",
        "mail": {"user": "me@example.org", "type": "END,FAIL"},
        "qos": "normal",
        "constraint": "fast",
        "sbatch": ["--exclusive"],
        "srun": ["--label"],
        "task_prefix": ["numactl", "--interleave=all"],
        "activate": {"conda": "torch-env"},
    }
    if kind != "plugin":
        j["container"] = {"image": "img.sif", "mounts": ["/data:/data"], "workdir": "/w"}
    return j


# (where, path, kind of check). Paths index into the dicts above; [0] is a list element.
FIELDS = [
    ("job", "name", "sbatch:--job-name="), ("job", "account", "sbatch:--account="),
    ("job", "output", "sbatch:--output="), ("job", "error", "sbatch:--error="),
    ("job", "mail.user", "sbatch:--mail-user="), ("job", "mail.type", "sbatch:--mail-type="),
    ("job", "partition", "sbatch:--partition="), ("job", "gpu_type", "gres"),
    ("job", "time", "same"), ("job", "script", "command"), ("job", "args.0", "command"),
    ("job", "args.1", "command"), ("job", "env.PT_JOB", "env"), ("job", "env-key", "env"),
    ("job", "modules.0", "module:load"), ("job", "checkpoint.dir", "checkpoint"),
    ("job", "container.image", "image"), ("job", "container.mounts.0", "bind"),
    ("job", "container.workdir", "image"), ("job", "qos", "sbatch:--qos="),
    ("job", "constraint", "constraint"), ("job", "sbatch.0", "sbatch:"),
    ("job", "srun.0", "srun-option"), ("job", "task_prefix.1", "prefix"),
    ("job", "activate.conda", "conda"), ("profile", "variables.0", "same"),
    ("profile", "description", "same"), ("profile", "notes.0", "same"),
    ("profile", "sources.0", "same"), ("profile", "account.hint", "same"),
    ("profile", "local_scratch", "same"), ("profile", "partitions.0.description", "same"),
    ("profile", "deprecated", "same"),
    ("profile", "node.gpu_type", "gres"), ("profile", "partitions.0.name", "sbatch:--partition="),
    ("profile", "partitions.0.constraint", "constraint"),
    ("profile", "partitions.0.sbatch.0", "sbatch:"), ("profile", "sbatch.0", "sbatch:"),
    ("profile", "module_use.0", "module:use"), ("profile", "modules.0", "module:load"),
    ("profile", "container.modules.0", "module:load"), ("profile", "env.PT_SITE", "site-env"),
    ("profile", "env-key", "site-env"), ("profile", "container.binds.0", "bind"),
    ("profile", "python", "command"), ("profile", "port_range", "same"),
    ("job", "sweep.parameters.p.0", "sweep"), ("job", "sweep.parameters.p.1", "sweep"),
    ("job", "torchrun.options.0", "launcher-word"), ("job", "torchrun.command.1", "launcher-word"),
    ("job", "accelerate.options.0", "launcher-word"),
]


# The array task the script runs as: a sweep's task 0 gets each parameter's first value.
K_ARRAY_TASK = "0"


def set_launcher(job, launcher):
    """Makes job use launcher with options of its own (and for torchrun, a command of two
    words) that the field under test replaces."""
    job["launcher"] = launcher
    if launcher == "torchrun":
        job["torchrun"] = {"command": ["torchrun", "--run-path=x"], "options": ["--max-restarts=1"]}
    else:
        job["accelerate"] = {"options": ["--mixed_precision=no"]}


def add_sweep(job):
    """Makes job a sweep whose task 0 exports SWEEP_P, passed on as the last argument; its
    checkpoint is the task's own, as a sweep needs."""
    job["sweep"] = {"parameters": {"p": ["first", "second"]}, "parallel": 1}
    job["checkpoint"]["dir"] = "ck-${SLURM_ARRAY_TASK_ID}"
    job["args"] = job["args"] + ["${SWEEP_P}"]


def set_path(doc, path, value):
    keys = path.split(".")
    cur = doc
    for k in keys[:-1]:
        cur = cur[int(k)] if isinstance(cur, list) else cur.setdefault(k, {})
    last = keys[-1]
    if isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value


def get_path(doc, path):
    cur = doc
    for k in path.split("."):
        cur = cur[int(k)] if isinstance(cur, list) else cur[k]
    return cur


# --- Running ---------------------------------------------------------------------------------

def parse_log(data):
    """[(name, args, env)] from the stubs' NUL-separated records; NOTFOUND as ("NOTFOUND",...)."""
    parts = data.split(b"\0")
    out, i = [], 0
    while i < len(parts) - 1:
        tag = parts[i]
        if tag == b"NOTFOUND":
            out.append(("NOTFOUND", [parts[i + 1]], {}))
            i += 2
            continue
        assert tag == b"CMD", f"bad record {tag!r}"
        name = parts[i + 1].decode()
        argc = int(parts[i + 2])
        args = parts[i + 3:i + 3 + argc]
        i += 3 + argc
        envc = int(parts[i])
        env = dict(e.split(b"=", 1) for e in parts[i + 1:i + 1 + envc])
        i += 1 + envc
        out.append((name, args, env))
    return out


class Runner:
    def __init__(self, ddpgen, work):
        self.ddpgen, self.work = ddpgen, work
        self.plain_runs = {}
        self.bin = os.path.join(work, "bin")
        os.makedirs(self.bin, exist_ok=True)
        stub = os.path.join(work, "stub")
        with open(stub, "w") as f:
            f.write(STUB)
        os.chmod(stub, 0o755)
        for c in COMMANDS:
            os.symlink(stub, os.path.join(self.bin, c))
        os.symlink(shutil.which("bash"), os.path.join(self.bin, "bash"))

    def plain(self, kind, job, profile):
        """The script and commands of the case with every value at its default (cached)."""
        key = kind + ("-sweep" if "sweep" in job else "") + "-" + job["launcher"]
        if key not in self.plain_runs:
            d, r = self.render(job, profile, f"plain-{key}")
            assert r.returncode == 0, r.stderr.decode()
            self.plain_runs[key] = (r, [(n, a) for n, a, _ in self.execute(d, r.stdout)])
        return self.plain_runs[key]

    @staticmethod
    def ddpgen_env(d):
        """A clean environment: no profile or template from the caller's configuration, except
        an explicit DDPGEN_TEMPLATE_DIR."""
        env = {"PATH": "/usr/bin:/bin", "HOME": d, "XDG_CONFIG_HOME": d}
        if os.environ.get("DDPGEN_TEMPLATE_DIR"):
            env["DDPGEN_TEMPLATE_DIR"] = os.environ["DDPGEN_TEMPLATE_DIR"]
        return env

    def render(self, job, profile, case):
        d = os.path.join(self.work, case)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "job.yaml"), "w", encoding="utf-8") as f:
            f.write(document(job))
        with open(os.path.join(d, "site.yaml"), "w", encoding="utf-8") as f:
            f.write(document(profile))
        r = subprocess.run([self.ddpgen, "--profile", "./site.yaml", "job.yaml"], cwd=d,
                           capture_output=True, env=self.ddpgen_env(d))
        return d, r

    def batch_env(self, d):
        """The variables the script starts with."""
        return {"PATH": self.bin, "HOME": os.path.join(d, "run"),
                "REC_LOG": os.path.join(d, "rec.log"), "SLURM_JOB_ID": K_JOB_ID,
                "SLURM_ARRAY_TASK_ID": K_ARRAY_TASK, **BATCH_ENV}

    def execute(self, d, script):
        path = os.path.join(d, "job.sbatch")
        with open(path, "wb") as f:
            f.write(script)
        log = os.path.join(d, "rec.log")
        open(log, "wb").close()
        run = os.path.join(d, "run")
        os.makedirs(run, exist_ok=True)
        env = {**self.batch_env(d), "BASH_FUNC_command_not_found_handle%%": NOT_FOUND}
        subprocess.run([os.path.join(self.bin, "bash"), path], cwd=run, env=env,
                       capture_output=True, timeout=60)
        with open(log, "rb") as f:
            return parse_log(f.read())


def sbatch_lines(script):
    """The #SBATCH lines sbatch reads: those before the first line that is not a comment."""
    out = []
    for line in script.split(b"\n")[1:]:
        if line.startswith(b"#SBATCH"):
            out.append(line[len(b"#SBATCH "):])
        elif line.strip() and not line.startswith(b"#"):
            break
    return out


def job_shell_env(job, batch_env):
    """The variables srun's arguments expand with: the batch shell's and the job's env."""
    env = dict(batch_env)
    if "sweep" in job:
        env["SWEEP_P"] = job["sweep"]["parameters"]["p"][0]
    for k, v in job.get("env", {}).items():
        env[k] = expand_refs(v, batch_env)
    return env


def home_tilde(path):
    """A leading ~ as ${HOME}, as ddpgen writes it for the paths it expands."""
    return "${HOME}" + path[1:] if path == "~" or path.startswith("~/") else path


def early_env(job, batch_env):
    """The variables modules and activate expand with: the batch shell's and the sweep's."""
    env = dict(batch_env)
    if "sweep" in job:
        env["SWEEP_P"] = job["sweep"]["parameters"]["p"][0]
    return env


def check_arrival(where, kind, value, job, profile, script, log, batch_env):
    """Returns what is wrong with how value arrived, or None."""
    env = job_shell_env(job, batch_env)
    b = expand_refs(value, env).encode()
    by_name = {}
    for name, args, env_of in log:
        by_name.setdefault(name, []).append((args, env_of))
    srun_args, srun_env = by_name["srun"][-1]
    directives = sbatch_lines(script)
    if kind.startswith("sbatch:"):
        if value == "" and kind != "sbatch:":
            return None
        if value.startswith("--gres="):
            rest = value[len("--gres="):].encode()
            ok = any(d.startswith(b"--gres=gpu:") and d.endswith(b"," + rest) for d in directives)
            return None if ok else f"no #SBATCH --gres line ending in {rest!r}"
        want = kind[len("sbatch:"):].encode() + expand_refs(value, {}, patterns=True).encode()
        return None if want in directives else f"no #SBATCH line {want!r}"
    if kind == "constraint":
        # The partition's constraint and the job's, joined with "&" when both are given.
        parts = [c for c in (get_path(profile, "partitions.0.constraint"), job["constraint"]) if c]
        if not parts:
            return None
        want = b"--constraint=" + "&".join(parts).encode()
        return None if want in directives else f"no #SBATCH line {want!r}"
    if kind == "gres":
        t = get_path(profile, "node.gpu_type").encode()
        want = b"--gres=gpu:" + (t + b":" if t else b"") + b"2"
        return None if want in directives else f"no #SBATCH line {want!r}"
    if kind == "launcher-word":
        # One word after the launcher's program: torchrun's own options and command words,
        # accelerate's options in the wrapper's arguments.
        program = b"torchrun" if job["launcher"] == "torchrun" else b"ddpgen-task"
        ok = program in srun_args and b in srun_args[srun_args.index(program) + 1:]
        return None if ok else f"srun got {srun_args!r}, expected {b!r} after {program!r}"
    if kind == "command":
        python = [w for w in get_path(profile, "python").split(" ") if w]
        if job["launcher"] != "srun":
            python = []
        words = [w.encode() for w in python] + [expand_refs(home_tilde(job["script"]), env).encode()]
        words += [expand_refs(a, env).encode() for a in job["args"]]
        n = len(words)
        ok = any(srun_args[i:i + n] == words for i in range(len(srun_args) - n + 1))
        return None if ok else f"srun got {srun_args!r}, expected the words {words!r}"
    if kind in ("srun-option", "prefix"):
        want = [b"numactl", b] if kind == "prefix" else [b]
        n = len(want)
        ok = any(srun_args[i:i + n] == want for i in range(len(srun_args) - n + 1))
        return None if ok else f"srun got {srun_args!r}, expected {want!r}"
    if kind == "conda":
        # Before env is exported: the batch shell's variables and the sweep's only.
        early = expand_refs(home_tilde(value), early_env(job, batch_env)).encode()
        ok = any(args == [b"activate", early] for args, _ in by_name.get("conda", []))
        return None if ok else "no conda activate VALUE"
    if kind == "env":
        (k, v), = job["env"].items()
        got, want = srun_env.get(k.encode()), expand_refs(v, batch_env).encode()
        return None if got == want else f"srun's {k} is {got!r}, expected {want!r}"
    if kind == "sweep":
        # Task 0 runs the first value (index 0 of the list), byte for byte: exported to every
        # task and, through ${SWEEP_P}, the program's last argument.
        first = job["sweep"]["parameters"]["p"][0].encode()
        if srun_env.get(b"SWEEP_P") != first:
            return f"srun's SWEEP_P is {srun_env.get(b'SWEEP_P')!r}, expected {first!r}"
        return None if srun_args[-1:] == [first] else f"srun got {srun_args!r}, last {first!r}"
    if kind == "site-env":
        (k, v), = profile["env"].items()
        # bash sets IFS itself, whatever the environment says.
        shell_vars = {"IFS": " \t\n", **batch_env}
        got, want = srun_env.get(k.encode()), expand_site(v, shell_vars).encode()
        return None if got == want else f"srun's {k} is {got!r}, expected {want!r}"
    if kind.startswith("module:"):
        # A job's modules expand as activate does; the site's arrive as written.
        if where == "job":
            value = expand_refs(value, early_env(job, batch_env))
        want = [kind[len("module:"):].encode(), value.encode()]
        ok = any(args == want for args, _ in by_name.get("module", []))
        return None if ok else f"no module call {want!r}"
    if kind == "checkpoint":
        b = expand_refs(home_tilde(value), env).encode()
        if srun_env.get(b"DDP_CHECKPOINT_DIR") != b:
            return f"DDP_CHECKPOINT_DIR is {srun_env.get(b'DDP_CHECKPOINT_DIR')!r}"
        if not any(args == [b"-p", b"--", b] for args, _ in by_name.get("mkdir", [])):
            return "no mkdir -p -- DIR"
        notice = b + b"/.ddpgen-requeue-notice." + K_JOB_ID.encode()
        if srun_env.get(b"DDP_REQUEUE_NOTICE") != notice:
            return f"DDP_REQUEUE_NOTICE is {srun_env.get(b'DDP_REQUEUE_NOTICE')!r}"
        return None
    if kind in ("image", "bind"):
        runtime = get_path(profile, "container.runtimes.0")
        c = job["container"]
        # The image and the mounts are host paths: a leading ~ is ${HOME}; the workdir is not.
        mounts = [home_tilde(m) for m in profile["container"]["binds"] + c["mounts"]]
        image = expand_refs(home_tilde(c["image"]), env).encode()
        workdir = expand_refs(c["workdir"], env)
        if runtime == "pyxis":
            want = [b"--container-image=" + image,
                    b"--container-mounts=" + ",".join(expand_refs(m, env) for m in mounts).encode()]
            if workdir:
                want.append(b"--container-workdir=" + workdir.encode())
            ok = all(w in srun_args for w in want)
            return None if ok else f"srun got {srun_args!r}, expected {want!r}"
        args = by_name.get(runtime, [([], {})])[0][0]
        want = [b"exec", b"--nv"]
        for m in mounts:
            want += [b"--bind", expand_refs(m, env).encode()]
        if workdir:
            want += [b"--pwd", workdir.encode()]
        want.append(image)
        return None if args[:len(want)] == want else f"{runtime} got {args!r}, expected {want!r}"
    return None  # "same": checked by the command sequence alone


def run_case(runner, rng, index):
    kind_of_site = rng.choice(["plugin", "apptainer", "pyxis"])
    job, profile = base_job(kind_of_site), base_profile(kind_of_site)
    fields = [f for f in FIELDS
              if not (kind_of_site == "plugin" and f[1].startswith("container."))]
    picked = rng.sample(fields, rng.choice([1, 1, 2]))
    if any(path.startswith("sweep.") for _, path, _ in picked):
        add_sweep(job)
    launchers = {path.split(".")[0] for _, path, _ in picked} & {"torchrun", "accelerate"}
    if len(launchers) > 1:
        picked = [f for f in picked if not f[1].startswith("accelerate.")]
    for launcher in sorted(launchers)[:1]:
        set_launcher(job, launcher)
    r0, plain = runner.plain(kind_of_site, job, profile)
    values = []
    for where, path, kind in picked:
        doc = job if where == "job" else profile
        value = random_value(rng, var_heavy=kind == "site-env")
        if path == "env-key":
            doc["env"] = {value: "v"}
        else:
            set_path(doc, path, value)
        values.append((where, path, kind, value))
    d, r = runner.render(job, profile, f"c{index}")
    report = {"case": index, "values": values, "dir": d,
              "job.yaml": document(job), "site.yaml": document(profile)}
    if r.returncode != 0:
        err = r.stderr.decode("utf-8", "replace")
        lines = err.rstrip("\n").split("\n")
        if r.returncode != 1 or r.stdout or len(lines) != 1 or not lines[0].startswith(
                "ddpgen: error: ") or "internal" in err:
            return "refused badly", report | {"stderr": err, "status": r.returncode}
        shutil.rmtree(d)
        return "refused", None
    log = runner.execute(d, r.stdout)
    commands = [(n, a) for n, a, _ in log]
    if any(n == "NOTFOUND" for n, _ in commands):
        return "ran a command", report | {"log": commands}
    if any(path == "python" for _, path, _, _ in values) and job["launcher"] == "srun":
        # Only "python3" is a stub: another interpreter's name arrives in srun's arguments
        # (checked below) but runs nothing.
        plain = [(n, a) for n, a in plain if n != "python3"]
        commands = [(n, a) for n, a in commands if n != "python3"]
    if [n for n, _ in commands] != [n for n, _ in plain]:
        return "different commands", report | {"log": commands, "plain": plain}
    # No directive added (an empty value may drop one), and none after the first command,
    # where sbatch would ignore it.
    options = [line.split(b"=")[0] for line in sbatch_lines(r.stdout)]
    plain_options = [line.split(b"=")[0] for line in sbatch_lines(r0.stdout)]
    all_lines = [line for line in r.stdout.split(b"\n") if line.startswith(b"#SBATCH")]
    if (len(options) > len(plain_options) or not set(options) <= set(plain_options) or
            len(all_lines) != len(options)):
        return "different #SBATCH lines", report | {"script": r.stdout.decode("utf-8", "replace")}
    if all(kind == "same" for _, _, kind, _ in values) and commands != plain:
        return "changed commands", report | {"log": commands, "plain": plain}
    for where, path, kind, value in values:
        problem = check_arrival(where, kind, value, job, profile, r.stdout, log,
                                runner.batch_env(d))
        if problem:
            return "did not arrive", report | {"field": path, "problem": problem}
    shutil.rmtree(d)
    return "accepted", None


def worker(args):
    ddpgen, seed, first, count = args
    work = tempfile.mkdtemp(prefix="ddpgen-property-")
    runner = Runner(ddpgen, work)
    counts = {}
    try:
        for i in range(first, first + count):
            rng = random.Random(seed * 1_000_003 + i)
            outcome, report = run_case(runner, rng, i)
            if report:
                report["seed"] = seed
                return counts, (outcome, report)
            counts[outcome] = counts.get(outcome, 0) + 1
    finally:
        if os.environ.get("PROPERTY_KEEP") != "1":
            shutil.rmtree(work, ignore_errors=True)
    return counts, None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("ddpgen")
    p.add_argument("--cases", type=int, default=1200)
    p.add_argument("--seed", type=int, default=int(os.environ.get("PROPERTY_SEED", "1")))
    p.add_argument("--jobs", type=int, default=2)
    a = p.parse_args()
    started = time.monotonic()
    per = -(-a.cases // a.jobs)
    chunks = [(os.path.abspath(a.ddpgen), a.seed, j * per, min(per, a.cases - j * per))
              for j in range(a.jobs)]
    totals, failure = {}, None
    with ProcessPoolExecutor(a.jobs) as pool:
        for counts, broken in pool.map(worker, chunks):
            for k, v in counts.items():
                totals[k] = totals.get(k, 0) + v
            failure = failure or broken
    elapsed = time.monotonic() - started
    done = sum(totals.values())
    print(f"property: {done} cases (seed {a.seed}): {totals.get('refused', 0)} refused, "
          f"{totals.get('accepted', 0)} accepted byte for byte; {elapsed:.1f} s")
    if failure:
        outcome, report = failure
        print(f"BROKEN ({outcome}): {report!r}")
        print("rerun: PROPERTY_KEEP=1 PROPERTY_SEED=%d %s %s" % (a.seed, sys.argv[0], a.ddpgen))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
