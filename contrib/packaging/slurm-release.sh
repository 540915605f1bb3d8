#!/bin/sh
# Prints the Slurm release (MAJOR.MINOR, e.g. 22.05) whose headers the plugin is compiled
# against, read from slurm/slurm_version.h; with --next, the release after it (22.06): the
# packages require Slurm >= this and < next, because slurmd and srun refuse a SPANK plugin
# whose plugin_version has another MAJOR.MINOR. DDP_SLURM_INCLUDE_DIR overrides /usr/include.
set -eu
header=${DDP_SLURM_INCLUDE_DIR:-/usr/include}/slurm/slurm_version.h
[ -r "$header" ] || { echo "slurm-release.sh: $header not found (install libslurm-dev)" >&2; exit 1; }
number=$(sed -n 's/^#define SLURM_VERSION_NUMBER[[:space:]]*0x\([0-9a-fA-F]*\).*/\1/p' "$header")
[ -n "$number" ] || { echo "slurm-release.sh: no SLURM_VERSION_NUMBER in $header" >&2; exit 1; }
major=$((0x$number >> 16 & 0xff))
minor=$((0x$number >> 8 & 0xff))
[ "${1:-}" = --next ] && minor=$((minor + 1))
printf '%d.%02d\n' "$major" "$minor"
