#!/bin/bash
# ddpgen -o onto what another user may have planted: the new script never takes write bits the
# umask withholds (nor setuid), and a FIFO that nobody reads is an error, never a hang.
# Usage: output.sh DDPGEN GOLDEN_DIR
set -uo pipefail
ddpgen=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
cp "$2/local-srun/job.yaml" job.yaml
fails=0
fail() {
  echo "FAIL: $*" >&2
  fails=$((fails + 1))
}
umask 022

# A planted world-writable file: replaced by a script of mode 0644, not 0666.
touch planted.sbatch
chmod 0666 planted.sbatch
"$ddpgen" --profile local job.yaml -o planted.sbatch || fail "-o over a 0666 file failed"
mode=$(stat -c %a planted.sbatch)
[[ $mode == 644 ]] || fail "-o over a 0666 file under umask 022 gave mode $mode, expected 644"

# Setuid and group write are dropped too; the execute bits the user set stay.
touch suid.sbatch
chmod 6775 suid.sbatch
"$ddpgen" --profile local job.yaml -o suid.sbatch || fail "-o over a 6775 file failed"
mode=$(stat -c %a suid.sbatch)
[[ $mode == 755 ]] || fail "-o over a 6775 file under umask 022 gave mode $mode, expected 755"

# A FIFO with no reader: an error within a few seconds (today's bound is 1 s), named.
mkfifo fifo
start=$SECONDS
timeout 10 "$ddpgen" --profile local job.yaml -o fifo 2>err
status=$?
[[ $status -ne 124 ]] || fail "-o onto a FIFO nobody reads hung (killed after 10 s)"
[[ $status -eq 1 ]] || fail "-o onto a FIFO nobody reads: exit $status, expected 1"
grep -q 'fifo: cannot open: no process reads this FIFO' err || fail "-o onto a FIFO: $(cat err)"
((SECONDS - start <= 5)) || fail "-o onto a FIFO took $((SECONDS - start)) s"
[[ -p fifo ]] || fail "-o replaced the FIFO"

((fails == 0)) && echo "output: passed"
exit $((fails > 0))
