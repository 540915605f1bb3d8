# bash completion for ddpgen: subcommands, options, profile names found on ddpgen's profile
# path, job keys for --set. Installed as .../bash-completion/completions/ddpgen.
# Profile names and job keys come from ddpgen itself (`ddpgen profiles`, `ddpgen schema job
# --keys`), so the completion knows what that ddpgen knows, with no list kept here.

_ddpgen_profiles() {
  "$1" profiles 2>/dev/null | while read -r name _; do printf '%s\n' "$name"; done
}

# The caller's jobs in the queue, for status and logs: squeue's ids, none where it is missing.
_ddpgen_jobs() {
  squeue --me --noheader --format=%i 2>/dev/null
}

_ddpgen() {
  local cur prev prog=${COMP_WORDS[0]}
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD - 1]}
  COMPREPLY=()

  # The subcommand path so far: "", "validate", "profile", "profile show", "schema", ...
  local cmd="" i word
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    case "$cmd:$word" in
      :validate | :profiles | :schema | :profile | :submit | :status | :logs) cmd=$word ;;
      profile:show | profile:init) cmd="profile $word" ;;
    esac
  done

  case $prev in
    --profile)
      if [[ $cur == */* || $cur == *.yaml ]]; then
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      else
        mapfile -t COMPREPLY < <(compgen -W "$(_ddpgen_profiles "$prog")" -- "$cur")
      fi
      return 0
      ;;
    --set)
      local keys
      keys=$("$prog" schema job --keys 2>/dev/null | sed 's/$/=/')
      mapfile -t COMPREPLY < <(compgen -W "$keys" -- "$cur")
      compopt -o nospace 2>/dev/null
      return 0
      ;;
    -o | --output)
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      compopt -o filenames 2>/dev/null
      return 0
      ;;
    --name) return 0 ;;
  esac

  local words
  case $cmd in
    "") words="--profile --set -o --output --help --version validate submit status logs profiles profile schema" ;;
    validate) words="--profile --set --live --help" ;;
    submit) words="--profile --set -o --output --follow --parsable --no-live --help" ;;
    status) words="$(_ddpgen_jobs) --help" ;;
    logs) words="$(_ddpgen_jobs) -f --follow --rank --help" ;;
    profile) words="show init --help" ;;
    "profile show") words="$(_ddpgen_profiles "$prog") --help" ;;
    "profile init") words="--name -o --output --help" ;;
    schema) words="job profile --keys --help" ;;
    profiles) words="--help" ;;
  esac
  # Options only once a '-' is typed, as most completions do.
  if [[ $cur != -* ]]; then
    local w kept=""
    for w in $words; do [[ $w == -* ]] || kept+=" $w"; done
    words=$kept
  fi
  if [[ $cur != -* && ($cmd == "" || $cmd == validate || $cmd == submit) ]]; then
    # or a job file: YAML files and directories
    mapfile -t COMPREPLY < <(
      compgen -W "$words" -- "$cur"
      compgen -f -X '!*.yaml' -- "$cur"
      compgen -f -X '!*.yml' -- "$cur"
      compgen -d -- "$cur"
    )
    compopt -o filenames 2>/dev/null
  else
    mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
  fi
  return 0
}

complete -F _ddpgen ddpgen
