#!/usr/bin/env bash
# The embedded test cluster: a real Debian Slurm (slurmctld + 3 slurmd, munge) on this one
# machine, each daemon a host of its own in a network namespace.
#
#   cluster.sh up [--nodes N] [--slurm RELEASE] [--site NAME] [--topology tree|block]
#                 [--plugin PATH/spank_ddp.so] [--plugstack-args "k=v ..."] [--timeout SECS]
#   cluster.sh down                      stop everything `up` started; safe to run twice
#   cluster.sh status                    namespaces, daemons, sinfo; exit 1 when not up
#   cluster.sh run CMD...                run CMD on the login host (srun, sbatch, salloc, ...)
#   cluster.sh set-plugstack "k=v ..."   rewrite plugstack.conf; applies to the next step
#   cluster.sh set-plugstack-kind required|optional   the plugin's plugstack.conf keyword
#   cluster.sh set-hosts NODE [FILE]     NODE's /etc/hosts from FILE (none: the common one)
#   cluster.sh set-dns IP|off            names not in the hosts files go to the DNS server IP
#                                        (nsswitch "hosts: files dns", one try, 30 s); off: files only
#   cluster.sh install-plugin PATH       replace the plugin; applies to the next step
#   cluster.sh check                     exit 77 naming what is missing to run a cluster
#   cluster.sh logs                      the last lines of every daemon log
#
# Hosts: ddp-login (10.77.0.10, runs slurmctld and every `run` command) and node01..node03
# (10.77.0.11-13, one slurmd each), joined by a bridge that lives in a namespace of its own, so
# the root namespace's network is never touched. One munged in the root namespace serves all
# of them through its socket path. State, configuration and logs: ${DDP_CLUSTER_DIR:-/tmp/ddp-cluster}.
#
# --nodes N (1-1000, default 3) starts N slurmds instead: node01..nodeN, or node001..nodeN with
# three digits from 100 nodes on, at 10.77.K.11 onwards. Past 244 nodes the addresses run on
# beyond 10.77.K.255 and the hosts' mask widens from /24 to /16; that overlap with other cluster
# ids' subnets is harmless, since each cluster's bridge lives in a namespace of its own. The
# kernel keeps one neighbour (ARP) table for all namespaces, 1024 entries by default
# (net.ipv4.neigh.default.gc_thresh3), and a cluster whose every host talks to every other (a
# gloo all-reduce) fills (N+1)^2 of them: `up` raises gc_thresh1/2/3 by what the clusters that
# are up need together, records the values it found, and the last `down` puts them back
# (/run/ddp-cluster-neigh holds the record, so it is shared by every cluster id and forgotten
# at reboot, like the settings themselves).
# Root only. DDP_CLUSTER_ID=N (0-9, default 0) runs cluster N beside the others: namespaces
# ddpcN-*, subnet 10.77.N.0/24, state /tmp/ddp-cluster-N (cluster 0 keeps the names above).
#
# --site NAME configures the cluster like a real site, from tests/cluster/sites/NAME/ (data,
# not code): slurm.conf (that site's select plugin, GRES, nodes with features, partitions and
# limits; it replaces the plain node and partition lines), gres.conf (GPUs backed by fake
# device nodes under STATE/dev), optionally job_submit.lua (a site rule such as a required account),
# modules/ (Lmod modulefiles named like the site's: stubs that point to the local python3) and
# bin/ (stub container runtimes). `run` then gives commands that site's login environment: bin/
# first on a plain system PATH, MODULEPATH, and BASH_ENV set to Lmod's init so that batch
# scripts have `module`. Nothing of it is installed outside STATE. Sites: ls tests/cluster/sites.
#
# --topology tree|block makes the plain cluster a site with a topology plugin: select/cons_tres
# (which topology/tree requires), TopologyPlugin=topology/KIND and a topology.conf whose order
# contradicts the node names: the last node alone on the first switch (block), the others on the
# second. Slurm 26.05 numbers a step's tasks in that order by default (task 0 on the last node
# of SLURM_STEP_NODELIST, "Add topology-aware task distribution for steps"); earlier releases
# keep the order of the names. topology/block needs Slurm 23.11 or later.
#
# --slurm RELEASE (22.05, 24.11, 26.05) runs that Slurm release: munged, slurmctld, the slurmds,
# their slurmstepds, the job tasks and every `run` command come from the Debian userland that
# ships it (tests/cluster/userland.sh: a chroot under /tmp, made on first use and then reused;
# this machine's own Slurm when it is that release). Without --plugin, the plugin is built
# against that release's headers from this checkout into build-slurm-RELEASE/ and loaded. /tmp
# and this checkout are the same paths inside. Without --slurm: this machine's Slurm, as always.
#
# DDP_CLUSTER_CRED_EXPIRE=SECONDS (default 10) is slurm.conf's cred_expire. Slurm holds a
# requeued job for that long plus a second before it may start again (its requeue_delay
# defaults to the credential lifetime), so the tests' requeues take about 15 s; Slurm's own
# default, 120, is a real site's requeue delay (tests/bench/bench_respawn.sh measures both).
set -euo pipefail

readonly k_id=${DDP_CLUSTER_ID:-0}
[[ $k_id =~ ^[0-9]$ ]] || { echo "cluster.sh: error: DDP_CLUSTER_ID=$k_id: expected 0-9" >&2; exit 2; }
if ((k_id == 0)); then
  readonly k_state=${DDP_CLUSTER_DIR:-/tmp/ddp-cluster}
  readonly k_ns_prefix=ddpc-
else
  readonly k_state=${DDP_CLUSTER_DIR:-/tmp/ddp-cluster-$k_id}
  readonly k_ns_prefix=ddpc$k_id-
fi
readonly k_cred_expire=${DDP_CLUSTER_CRED_EXPIRE:-10}
[[ $k_cred_expire =~ ^[1-9][0-9]{0,4}$ ]] ||
  { echo "cluster.sh: error: DDP_CLUSTER_CRED_EXPIRE=$k_cred_expire: expected 1-99999 seconds" >&2; exit 2; }
readonly k_skip=77                   # ctest SKIP_RETURN_CODE: a prerequisite is missing
readonly k_bridge_ns=${k_ns_prefix}br
readonly k_subnet_prefix=10.77.$k_id
readonly k_login=ddp-login
readonly k_login_ip=${k_subnet_prefix}.10
readonly k_max_nodes=1000            # a Linux bridge takes 1024 ports: the nodes and the login host
readonly k_neigh_dir=/run/ddp-cluster-neigh
readonly k_neigh_keys=(gc_thresh1 gc_thresh2 gc_thresh3)
# The nodes of the cluster that is up (set_nodes); `up` records their number in the state.
k_nodes=() k_node_ips=()
k_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly k_here k_sites_dir=$k_here/sites k_userland=$k_here/userland.sh
k_repo=$(cd "$k_here/../.." && pwd)
readonly k_repo
# Lmod's bash initialisation (Debian package lmod); BASH_ENV makes batch scripts source it.
readonly k_lmod_init=/usr/share/lmod/lmod/init/bash

etc=$k_state/etc
log=$k_state/log
run_dir=$k_state/run
munge_dir=$k_state/munge
lib=$k_state/lib
plugin_so=$lib/spank_ddp.so
conf=$etc/slurm.conf
munge_socket=$munge_dir/munge.socket.2
site_dir=$k_state/site            # the emulated site's stubs and modulefiles (up --site)
release_file=$k_state/slurm-release   # "RELEASE ROOT" of up --slurm; absent: this machine's Slurm
user_env_file=$k_state/user.env       # VAR=VALUE lines `run` adds: the userland's login profile
nodes_file=$k_state/nodes             # the number of nodes of `up --nodes`
topology_file=$k_state/topology       # the KIND of `up --topology`; absent: no topology plugin

die() { printf 'cluster.sh: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'cluster.sh: %s\n' "$*" >&2; }

# Prints the reason the cluster cannot run here, or nothing when it can.
missing_prerequisite() {
  if [[ $(id -u) -ne 0 ]]; then echo "not root (network namespaces and slurmd need root)"; return; fi
  local cmd
  for cmd in ip nsenter unshare mount munged munge slurmctld slurmd slurmstepd srun sbatch \
             salloc sinfo squeue scontrol; do
    command -v "$cmd" >/dev/null 2>&1 ||
      { echo "$cmd not found (install: bash contrib/install-deps.sh)"; return; }
  done
  unshare --net --uts --mount true 2>/dev/null ||
    { echo "cannot create network/UTS/mount namespaces here (unshare --net --uts --mount failed)"; return; }
}

# Runs a command as host NS (namespace suffix) named HOSTNAME: in its network namespace, with
# its own hostname, /etc/hosts and name lookup. $launcher (setsid, exec) goes in front.
# Not `ip netns exec`: that remounts /sys, and slurmd then fails in its cgroup set-up.
# With up --slurm, the command runs chrooted into that release's userland (userland.sh enter,
# in the same private mount namespace), whose /etc/hosts gets the bind instead.
launcher=()
as_host() {
  local ns=$1 hostname=$2; shift 2
  local root enter=()
  root=$(userland_root)
  [[ $root == / ]] || enter=("$k_userland" enter "$root")
  # shellcheck disable=SC2016  # the inner script reads its own positional parameters
  "${launcher[@]}" nsenter --net="/run/netns/$k_ns_prefix$ns" \
    unshare --uts --mount --propagation private -- \
    /bin/sh -c 'hosts="$2/hosts.$1"; [ -e "$hosts" ] || hosts="$2/hosts"
                hostname "$1" && mount --bind "$hosts" "$3/etc/hosts" &&
                mount --bind "$2/nsswitch.conf" "$3/etc/nsswitch.conf" &&
                { [ ! -e "$3/etc/resolv.conf" ] || mount --bind "$2/resolv.conf" "$3/etc/resolv.conf"; } &&
                shift 3 && exec "$@"' \
    as_host "$hostname" "$etc" "${root%/}" "${enter[@]}" "$@"
}

# The root of the userland the cluster's Slurm comes from: / for this machine's own.
userland_root() {
  local release root
  if read -r release root 2>/dev/null <"$release_file"; then echo "$root"; else echo /; fi
}

# Runs a command of the cluster's userland in the root network namespace (munged, munge).
in_userland() {
  local root
  root=$(userland_root)
  if [[ $root == / ]]; then "$@"; return; fi
  unshare --mount --propagation private -- "$k_userland" enter "$root" "$@"
}

# Our namespaces that exist now, whatever the number of nodes `up` started: the prefix of
# cluster 0 (ddpc-) is not a prefix of another id's (ddpcN-).
our_namespaces() {
  local path
  for path in /run/netns/"$k_ns_prefix"*; do
    [[ -e $path ]] && basename "$path"
  done
  return 0
}

# Sets k_nodes and k_node_ips for COUNT nodes: names two digits wide (node01), or as wide as
# COUNT needs; addresses 10.77.K.11 onwards, running on past .255 (the /16 of host_mask).
set_nodes() {
  local count=$1 width=${#1} i
  ((width >= 2)) || width=2
  k_nodes=() k_node_ips=()
  # printf -v, not a subshell per node: every `run` loads the nodes.
  local name ip
  for ((i = 1; i <= count; i++)); do
    printf -v name 'node%0*d' "$width" "$i"
    host_ip ip $((10 + i))
    k_nodes+=("$name") k_node_ips+=("$ip")
  done
}

# host_ip VAR OFFSET: sets VAR to the address of the host OFFSET places after 10.77.K.0.
host_ip() {
  local at=$((k_id * 256 + $2))
  printf -v "$1" '10.77.%d.%d' $((at / 256)) $((at % 256))
}

# The hosts' prefix length: /24 while every address fits in 10.77.K.0/24 (.11-.254).
host_mask() {
  if ((10 + ${#k_nodes[@]} <= 254)); then echo 24; else echo 16; fi
}

# The nodes of the cluster in this state directory (3 when none was recorded).
load_nodes() {
  local count=3
  read -r count 2>/dev/null <"$nodes_file" || true
  [[ $count =~ ^[1-9][0-9]*$ ]] || count=3
  set_nodes "$count"
}

# munged's pid when the pid file names a live munged on our socket.
munged_pid() {
  local pid
  pid=$(cat "$run_dir/munged.pid" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q "munged.*$munge_socket" || return 1
  echo "$pid"
}

cmd_down() {
  local ns pids pid
  # Every process in our namespaces: daemons, slurmstepd, job tasks, `run` commands. A short
  # grace only: an srun told to stop keeps retrying a slurmctld that is stopping too, and
  # nothing needs a clean shutdown since `up` starts from empty state.
  local signal grace
  for signal in TERM KILL; do
    pids=$(for ns in $(our_namespaces); do ip netns pids "$ns" 2>/dev/null; done)
    [[ -z $pids ]] && break
    # shellcheck disable=SC2086
    kill -s "$signal" $pids 2>/dev/null || true
    grace=$([[ $signal == TERM ]] && echo 10 || echo 50)   # tenths of a second
    while ((grace-- > 0)); do
      pids=$(for ns in $(our_namespaces); do ip netns pids "$ns" 2>/dev/null; done)
      [[ -z $pids ]] && break
      sleep 0.1
    done
  done
  [[ -n ${pids:-} ]] && say "warning: processes still alive after SIGKILL: $pids"
  for ns in $(our_namespaces); do ip netns delete "$ns" 2>/dev/null || say "warning: cannot delete $ns"; done
  if pid=$(munged_pid); then
    kill "$pid" 2>/dev/null || true
    grace=50
    while kill -0 "$pid" 2>/dev/null && ((grace-- > 0)); do sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$run_dir"/*.pid "$munge_socket" "$munge_socket.lock"
  neigh_settle release
  return 0
}

# The kernel's neighbour-table limits now: "GC_THRESH1 GC_THRESH2 GC_THRESH3".
neigh_now() {
  local key values=()
  for key in "${k_neigh_keys[@]}"; do values+=("$(sysctl -n "net.ipv4.neigh.default.$key")"); done
  echo "${values[*]}"
}

# hold NODES: this cluster needs room for (NODES+1)^2 neighbour entries; release: it needs none.
# Then sets the limits for every cluster that is up (its login namespace exists), under a lock
# because several ids may come and go at once.
neigh_settle() {
  local action=$1 nodes=${2:-0}
  mkdir -p "$k_neigh_dir" || return 1
  (
    flock 9
    if [[ $action == hold ]]; then
      echo "$k_ns_prefix $(((nodes + 1) * (nodes + 1)))" >"$k_neigh_dir/cluster-$k_id"
    else
      rm -f "$k_neigh_dir/cluster-$k_id"
    fi
    neigh_apply
  ) 9>"$k_neigh_dir/lock"
}

# Below gc_thresh1 the kernel never collects an entry: while the clusters that are up need no
# more than the machine's own gc_thresh1, its own settings stay (and are put back if raised).
# Above, each limit becomes the machine's own plus what the clusters need (twice that for the
# soft and hard maximum, where the kernel starts collecting and then refuses: "neighbor table
# overflow", and a rank's connect fails with "No route to host").
neigh_apply() {
  local total=0 file prefix need saved=$k_neigh_dir/saved base now want i
  for file in "$k_neigh_dir"/cluster-*; do
    if ! [[ -e $file ]] || ! read -r prefix need <"$file"; then continue; fi
    if [[ -e /run/netns/${prefix}login && $need =~ ^[0-9]+$ ]]; then
      total=$((total + need))
    else
      rm -f "$file"   # a cluster that is gone without `down`
    fi
  done
  now=$(neigh_now) || return 1
  base=$(cat "$saved" 2>/dev/null) || base=$now
  read -ra base <<<"$base"
  if ((total <= base[0])); then
    [[ -e $saved ]] || return 0
    want=("${base[@]}")
  else
    [[ -e $saved ]] || echo "$now" >"$saved"
    want=($((base[0] + total)) $((base[1] + 2 * total)) $((base[2] + 2 * total)))
  fi
  [[ "${want[*]}" == "$now" ]] || say "neighbour table (gc_thresh1/2/3): $now -> ${want[*]}"
  for i in 0 1 2; do
    sysctl -q -w "net.ipv4.neigh.default.${k_neigh_keys[$i]}=${want[$i]}" ||
      { say "error: cannot set net.ipv4.neigh.default.${k_neigh_keys[$i]}"; return 1; }
  done
  ((total > base[0])) || rm -f "$saved"
}

write_config() {
  local site=$1 topology=$2
  mkdir -p "$etc" "$log" "$run_dir" "$lib" "$k_state/spool/ctld"
  {
    echo "127.0.0.1 localhost"
    echo "::1 localhost ip6-localhost ip6-loopback"
    echo "$k_login_ip $k_login"
    local i
    for i in "${!k_nodes[@]}"; do echo "${k_node_ips[$i]} ${k_nodes[$i]}"; done
  } >"$etc/hosts"
  # Each node gets its own copy, bind-mounted as its /etc/hosts, so that a test can give nodes
  # different views of the same names (set-hosts rewrites a copy in place, keeping the mount).
  local node
  for node in "${k_nodes[@]}"; do cp "$etc/hosts" "$etc/hosts.$node"; done
  # Names resolve from that file only: no DNS query ever leaves a namespace, and a name that is
  # not in it (a test's "node01-nosuchnet") fails at once.
  sed -E 's/^hosts:.*/hosts: files/' "$(userland_root | sed 's|/$||')/etc/nsswitch.conf" >"$etc/nsswitch.conf"
  grep -q '^hosts:' "$etc/nsswitch.conf" || echo 'hosts: files' >>"$etc/nsswitch.conf"
  # The hosts' resolv.conf (bind-mounted like the files above): no server until set-dns names one.
  echo "# cluster.sh: no DNS server (set-dns IP names one)" >"$etc/resolv.conf"

  cat >"$conf" <<EOF
# Written by tests/cluster/cluster.sh; rewritten at every 'up'.
ClusterName=ddp
SlurmctldHost=$k_login($k_login_ip)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
CredType=cred/munge
# One munged in the root namespace serves every host through its socket path. A short
# credential lifetime (DDP_CLUSTER_CRED_EXPIRE) lets a requeued job start again after ~15 s
# instead of ~2 min.
AuthInfo=socket=$munge_socket,cred_expire=$k_cred_expire
StateSaveLocation=$k_state/spool/ctld
SlurmdSpoolDir=$k_state/spool/%n
SlurmctldPidFile=$run_dir/slurmctld.pid
SlurmdPidFile=$run_dir/slurmd-%n.pid
SlurmctldLogFile=$log/slurmctld.log
SlurmdLogFile=$log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$etc/plugstack.conf
# No cgroups: every slurmd shares this machine's cgroup tree.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
# Gives steps SLURM_STEP_RESV_PORTS with srun --resv-ports.
MpiParams=ports=12000-12999
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
# The nodes claim more CPUs (and memory, and GPUs) than this machine has; take the
# configuration at its word.
SlurmdParameters=config_overrides
MailProg=/bin/true
# A job that can never run is refused at submission instead of blocking the queue.
EnforcePartLimits=ALL
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=600
Waittime=0
EOF
  if [[ -n $site ]]; then
    install_site "$site"
    return
  fi
  if [[ -n $topology ]]; then
    write_topology "$topology"
  else
    cat >>"$conf" <<EOF
# Whole nodes, as on most GPU clusters: the tasks of -N3 -n6 spread 2/2/2 (cons_tres would pack
# them 4/1/1 onto the first node), and a job owns all CPUs of its nodes, so its steps can run
# side by side. OverSubscribe=FORCE:4 below lets up to 4 jobs share a node at once.
SelectType=select/linear
EOF
  fi
  {
    node_lines
    echo "PartitionName=debug Nodes=$(node_range 0 $((${#k_nodes[@]} - 1))) Default=YES MaxTime=INFINITE OverSubscribe=FORCE:4 State=UP"
  } >>"$conf"
}

# up --topology KIND: topology/KIND and its topology.conf (beside slurm.conf, where every daemon
# looks), listing the last node first. A topology plugin needs select/cons_tres; tests give
# their steps --ntasks-per-node, which cons_tres would otherwise pack onto the first node.
write_topology() {
  local kind=$1 last=$((${#k_nodes[@]} - 1))
  ((last >= 1)) || die "up: --topology needs at least 2 nodes (a switch order to contradict)"
  local lone=${k_nodes[$last]} rest
  rest=$(node_range 0 $((last - 1)))
  cat >>"$conf" <<EOF
# up --topology $kind: $lone comes first in topology.conf, before $rest.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
TopologyPlugin=topology/$kind
EOF
  case $kind in
    tree)
      printf '%s\n' "# Leaf switches in this order; Slurm ranks nodes by it." \
        "SwitchName=s0 Nodes=$lone" "SwitchName=s1 Nodes=$rest" \
        "SwitchName=top Switches=s[0-1]" >"$etc/topology.conf" ;;
    block)
      printf '%s\n' "# Blocks in this order; Slurm ranks nodes by it." \
        "BlockName=b0 Nodes=$lone" "BlockName=b1 Nodes=$rest" "BlockSizes=1" >"$etc/topology.conf" ;;
  esac
}

# The names of nodes FIRST..LAST (indices into k_nodes) as one Slurm hostlist: node[01-03].
node_range() {
  local first=${k_nodes[$1]} last=${k_nodes[$2]}
  if (($1 == $2)); then echo "$first"; else echo "node[${first#node}-${last#node}]"; fi
}

# One NodeName line per run of nodes whose addresses share their first three bytes (one line
# for up to 244 nodes): NodeName=node[01-03] NodeAddr=10.77.K.[11-13] CPUs=8 State=UNKNOWN.
node_lines() {
  local start=0 i n=${#k_nodes[@]} net addrs
  for ((i = 1; i <= n; i++)); do
    net=${k_node_ips[$start]%.*}
    if ((i < n)) && [[ ${k_node_ips[$i]%.*} == "$net" ]]; then continue; fi
    addrs=${k_node_ips[$start]}
    ((start == i - 1)) || addrs="$net.[${k_node_ips[$start]##*.}-${k_node_ips[$((i - 1))]##*.}]"
    echo "NodeName=$(node_range "$start" $((i - 1))) NodeAddr=$addrs CPUs=8 State=UNKNOWN"
    start=$i
  done
}

# The sites `up --site` knows: the directories of tests/cluster/sites that hold a slurm.conf.
site_names() {
  local f
  for f in "$k_sites_dir"/*/slurm.conf; do
    [[ -e $f ]] && basename "$(dirname "$f")"
  done
  return 0
}

# Installs site NAME's description into the state directory: its slurm.conf fragment appended to
# $conf, gres.conf and job_submit.lua beside it (where slurmd and slurmctld look), with @SUBNET@
# and @STATE@ filled in; a fake device node for every GPU that gres.conf names; its stubs and
# modulefiles under $site_dir. Links are followed: sites share stubs and modules through them.
install_site() {
  local name=$1 src=$k_sites_dir/$1
  local fill=(-e "s|@SUBNET@|$k_subnet_prefix|g" -e "s|@STATE@|$k_state|g")
  printf '\n# Site %s, from %s/slurm.conf:\n' "$name" "$src" >>"$conf"
  sed "${fill[@]}" "$src/slurm.conf" >>"$conf"
  if [[ -f $src/gres.conf ]]; then sed "${fill[@]}" "$src/gres.conf" >"$etc/gres.conf"; fi
  if [[ -f $src/job_submit.lua ]]; then cp -L "$src/job_submit.lua" "$etc/job_submit.lua"; fi
  # File=DIR/nvidia[0-3]: one fake device per GPU. slurmd insists on a character or block
  # device; these are /dev/null's (1:3) under another name, so that whatever opens one reads
  # nothing and touches no hardware. With TaskPlugin=task/none nothing constrains them.
  local spec dir base i
  while read -r spec; do
    [[ $spec == "$k_state"/dev/* ]] ||
      die "site $name: gres.conf File=$spec must lie under @STATE@/dev (no real devices here)"
    dir=$(dirname "$spec") base=$(basename "$spec")
    mkdir -p "$dir"
    if [[ $base =~ ^([^[]*)\[([0-9]+)-([0-9]+)\]$ ]]; then
      for ((i = BASH_REMATCH[2]; i <= BASH_REMATCH[3]; i++)); do
        [[ -c $dir/${BASH_REMATCH[1]}$i ]] || mknod -m 666 "$dir/${BASH_REMATCH[1]}$i" c 1 3
      done
    else
      [[ -c $spec ]] || mknod -m 666 "$spec" c 1 3
    fi
  done < <(grep -o 'File=[^ ]*' "$etc/gres.conf" 2>/dev/null | cut -d= -f2-)
  mkdir -p "$site_dir"
  local part
  for part in bin modules; do
    if [[ -e $src/$part ]]; then cp -rL "$src/$part" "$site_dir/$part"; fi
  done
  cp -rL "$k_sites_dir/stubs" "$site_dir/stubs"
  echo "$name" >"$site_dir/name"
}

# The emulated site's name; nothing for the plain cluster.
current_site() {
  local name=""
  read -r name 2>/dev/null <"$site_dir/name" || true
  [[ -z $name ]] || echo "$name"
}

# plugstack.conf from the installed plugin and the saved arguments; replaced by rename because
# srun and slurmstepd read it at every step.
write_plugstack() {
  local args
  args=$(cat "$etc/plugstack.args" 2>/dev/null || true)
  local kind
  kind=$(cat "$etc/plugstack.kind" 2>/dev/null || echo required)
  if [[ -e $plugin_so ]]; then
    printf '%s %s%s\n' "$kind" "$plugin_so" "${args:+ $args}" >"$etc/plugstack.conf.tmp"
  else
    [[ -z $args ]] || die "plugstack arguments given but no plugin installed (cluster.sh install-plugin PATH)"
    : >"$etc/plugstack.conf.tmp"
  fi
  mv -f "$etc/plugstack.conf.tmp" "$etc/plugstack.conf"
}

cmd_install_plugin() {
  local src=${1:-}
  [[ -n $src && -f $src ]] || die "install-plugin: no such file: ${src:-(none given)}"
  mkdir -p "$lib"
  # Never write the .so in place: running slurmstepds have it mapped.
  local tmp
  tmp=$(mktemp "$lib/.spank_ddp.so.XXXXXX")
  cp -f "$src" "$tmp"
  chmod 755 "$tmp"
  mv -f "$tmp" "$plugin_so"
  [[ -d $etc ]] && write_plugstack
  return 0
}

cmd_set_plugstack() {
  [[ -d $etc ]] || die "set-plugstack: no cluster configuration in $k_state (run: cluster.sh up)"
  printf '%s' "${1:-}" >"$etc/plugstack.args"
  write_plugstack
}

cmd_set_plugstack_kind() {
  [[ -d $etc ]] || die "set-plugstack-kind: no cluster configuration in $k_state (run: cluster.sh up)"
  case ${1:-} in
    required | optional) printf '%s' "$1" >"$etc/plugstack.kind" ;;
    *) die "set-plugstack-kind: '${1:-}': expected required or optional" ;;
  esac
  write_plugstack
}

# Writes in place (never by rename): the node's /etc/hosts is a bind mount of this very file.
cmd_set_hosts() {
  local node=${1:-} src=${2:-$etc/hosts}
  [[ -n $node && -e $etc/hosts.$node ]] ||
    die "set-hosts: no node '$node' (valid: $(node_range 0 $((${#k_nodes[@]} - 1))))"
  [[ -f $src ]] || die "set-hosts: no such file: $src"
  cat "$src" >"$etc/hosts.$node"
}

# Sends the names the hosts files lack to the DNS server IP, with glibc's own bound set long
# (one try of 30 s) so that a test can tell a bound of the plugin's from the resolver's; `off`
# restores files only. Written in place: every host's nsswitch.conf and resolv.conf are bind
# mounts of these files, and each new process (slurmstepd) reads them afresh.
cmd_set_dns() {
  local server=${1:-}
  [[ -f $etc/nsswitch.conf && -f $etc/resolv.conf ]] ||
    die "set-dns: no cluster configuration in $k_state (run: cluster.sh up)"
  local hosts=files
  case $server in
    off) printf '# cluster.sh: no DNS server (set-dns IP names one)\n' >"$etc/resolv.conf" ;;
    *)
      [[ $server =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "set-dns: '$server': expected an IPv4 address or off"
      hosts="files dns"
      printf 'nameserver %s\noptions timeout:30 attempts:1\n' "$server" >"$etc/resolv.conf" ;;
  esac
  local rest
  rest=$(grep -v '^hosts:' "$etc/nsswitch.conf")
  printf '%s\nhosts: %s\n' "$rest" "$hosts" >"$etc/nsswitch.conf"
}

# Shows the last lines of every log, for a failed start.
log_tails() {
  local f
  for f in "$log"/*; do
    [[ -s $f ]] || continue
    printf '\n==> %s (last 20 lines) <==\n' "$f" >&2
    tail -n 20 "$f" >&2
  done
}

fail_up() {
  say "error: $*"
  log_tails
  say "logs: $log; stopping what was started"
  cmd_down
  exit 1
}

make_network() {
  ip netns add "$k_bridge_ns"
  ip -n "$k_bridge_ns" link set lo up
  ip -n "$k_bridge_ns" link add br0 type bridge
  ip -n "$k_bridge_ns" link set br0 up
  local names=(login "${k_nodes[@]}") ips=("$k_login_ip" "${k_node_ips[@]}") i ns mask
  mask=$(host_mask)
  for i in "${!names[@]}"; do
    ns=$k_ns_prefix${names[$i]}
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # One end is the host's eth0, the other a port of the bridge.
    ip -n "$k_bridge_ns" link add "v-${names[$i]}" type veth peer name eth0 netns "$ns"
    ip -n "$k_bridge_ns" link set "v-${names[$i]}" master br0 up
    ip -n "$ns" addr add "${ips[$i]}/$mask" dev eth0
    ip -n "$ns" link set eth0 up
  done
}

start_munge() {
  mkdir -p "$munge_dir"
  # munged insists on a private key and a socket directory others can read but not write.
  chmod 755 "$k_state" "$munge_dir"
  dd if=/dev/urandom of="$munge_dir/munge.key" bs=1024 count=1 status=none
  chmod 400 "$munge_dir/munge.key"
  in_userland munged --force --socket="$munge_socket" --key-file="$munge_dir/munge.key" \
    --pid-file="$run_dir/munged.pid" --log-file="$log/munged.log" \
    --seed-file="$munge_dir/munged.seed" >>"$log/munged.out" 2>&1 ||
    fail_up "munged did not start"
  local deadline=$((SECONDS + 10))
  until in_userland munge -n -S "$munge_socket" 2>/dev/null |
        in_userland unmunge -S "$munge_socket" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail_up "munged does not answer on $munge_socket"
    sleep 0.2
  done
}

# Starts a daemon in the foreground under setsid, as host HOST; its stderr goes to log/NAME.out.
start_daemon() {
  local ns=$1 host=$2 name=$3; shift 3
  launcher=(setsid)
  as_host "$ns" "$host" "$@" </dev/null >>"$log/$name.out" 2>&1 &
  launcher=()
}

# Runs NODE's slurmd, and starts it again when it dies of a crash (SIGSEGV, SIGABRT, SIGBUS,
# SIGFPE), as a site's service manager would: Debian 12's slurmd 22.05.8 corrupts its heap now
# and then when several steps of one job are launched on a node at once (seen with and without
# any SPANK plugin: `srun --overlap` x4 in a loop crashes one slurmd every few hundred
# allocations, in slurm_hostlist_create/destroy). Each restart is a line in $log/crashes, which
# tests/cluster/lib.bash reads (slurmd_crashes), so a test can tell a Slurm crash from its own
# failure. `down` stops slurmd with SIGTERM or SIGKILL, which never restart it.
supervise_slurmd() {
  local node=$1 rc
  cd "$log"   # a core file lands here, beside the logs, not in the caller's directory
  while :; do
    launcher=(setsid)
    rc=0
    as_host "$node" "$node" slurmd -D -f "$conf" -N "$node" || rc=$?
    launcher=()
    case $rc in
      134 | 135 | 136 | 139) ;;
      *) return "$rc" ;;
    esac
    [[ -e /run/netns/$k_ns_prefix$node ]] || return "$rc"
    printf '%s %s slurmd exited with status %d (signal %d); restarted\n' \
      "$(date +%FT%T)" "$node" "$rc" $((rc - 128)) >>"$log/crashes"
    sleep 0.2
  done
}

wait_for() {
  local what=$1 timeout=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail_up "$what not reached after ${timeout}s"
    sleep 0.5
  done
}

all_nodes_idle() {
  local states
  # sort -u: sinfo -N lists a node once per partition, and site nodes are in several.
  states=$(as_host login "$k_login" env SLURM_CONF="$conf" sinfo -h -N -o '%N %T' | sort -u) ||
    return 1
  [[ $(grep -cE '^node[0-9]+ idle$' <<<"$states") -eq ${#k_nodes[@]} ]]
}

cmd_up() {
  local plugin="" args="" timeout="" site="" release="" nodes=3 topology=""
  while (($#)); do
    case $1 in
      --nodes) nodes=${2:?--nodes needs a number}; shift 2 ;;
      --nodes=*) nodes=${1#*=}; shift ;;
      --plugin) plugin=${2:?--plugin needs a path}; shift 2 ;;
      --plugin=*) plugin=${1#*=}; shift ;;
      --plugstack-args) args=${2?--plugstack-args needs a value}; shift 2 ;;
      --plugstack-args=*) args=${1#*=}; shift ;;
      --timeout) timeout=${2:?--timeout needs seconds}; shift 2 ;;
      --site) site=${2:?--site needs a name}; shift 2 ;;
      --site=*) site=${1#*=}; shift ;;
      --slurm) release=${2:?--slurm needs a release}; shift 2 ;;
      --slurm=*) release=${1#*=}; shift ;;
      --topology) topology=${2:?--topology needs tree or block}; shift 2 ;;
      --topology=*) topology=${1#*=}; shift ;;
      *) die "up: unknown argument '$1' (valid: --nodes N, --slurm RELEASE, --site NAME, --topology tree|block, --plugin PATH, --plugstack-args \"k=v ...\", --timeout SECS)" ;;
    esac
  done
  case $topology in
    "" | tree | block) ;;
    *) die "up: --topology $topology: expected tree or block" ;;
  esac
  [[ -z $site || -z $topology ]] ||
    die "up: --topology with --site $site: a site's slurm.conf chooses its own plugins"
  if ! [[ $nodes =~ ^[1-9][0-9]*$ ]] || ((nodes > k_max_nodes)); then
    die "up: --nodes $nodes: expected a number of nodes from 1 to $k_max_nodes"
  fi
  [[ -z $site || $nodes == 3 ]] ||
    die "up: --nodes $nodes with --site $site: a site's slurm.conf describes its own 3 nodes"
  # Registration and the first sinfo take longer the more slurmds share this machine's CPUs.
  [[ -n $timeout ]] || timeout=$((90 + nodes / 2))
  if [[ -n $site && ! -f $k_sites_dir/$site/slurm.conf ]]; then
    die "up: --site $site: no such site (valid: $(site_names | paste -sd, | sed 's/,/, /g'))"
  fi
  local why
  why=$(missing_prerequisite)
  if [[ -n $why ]]; then say "skipped: $why"; exit "$k_skip"; fi
  if [[ -n $site && ! -r $k_lmod_init ]]; then
    say "skipped: --site needs Lmod ($k_lmod_init not found; install: bash contrib/install-deps.sh)"
    exit "$k_skip"
  fi
  [[ -z $plugin || -f $plugin ]] || die "up: --plugin $plugin: no such file (build it first)"

  local started=$SECONDS root=/
  cmd_down    # a previous run may have crashed half-way
  # Start from nothing, but remove only what this script creates: DDP_CLUSTER_DIR may be a
  # directory that holds other things.
  rm -rf "${k_state:?}"/{etc,log,run,munge,lib,spool,site,dev} "$release_file" "$user_env_file" \
    "$nodes_file" "$topology_file"
  mkdir -p "$k_state"
  if [[ -n $release ]]; then
    root=$("$k_userland" ensure "$release") || die "up: --slurm $release: no userland for it (above)"
    if [[ -z $plugin ]]; then plugin=$(build_plugin "$release"); fi
    echo "$release $root" >"$release_file"
  fi
  set_nodes "$nodes"
  echo "$nodes" >"$nodes_file"
  if [[ $topology == block ]] && in_userland slurmctld -V | grep -qE '^slurm(-wlm)? (1[0-9]|2[0-2]|23\.0[0-9])\.'; then
    die "up: --topology block: $(in_userland slurmctld -V) has no topology/block (23.11 and later)"
  fi
  [[ -z $topology ]] || echo "$topology" >"$topology_file"
  write_user_env
  write_config "$site" "$topology"
  printf '%s' "$args" >"$etc/plugstack.args"
  if [[ -n $plugin ]]; then cmd_install_plugin "$plugin"; else write_plugstack; fi
  local node
  for node in "${k_nodes[@]}"; do mkdir -p "$k_state/spool/$node"; done

  make_network || fail_up "network namespaces could not be created"
  neigh_settle hold "$nodes" || fail_up "the kernel's neighbour table cannot hold $nodes nodes (above)"
  start_munge
  start_login_holder
  start_daemon login "$k_login" slurmctld slurmctld -D -i -f "$conf"
  wait_for "slurmctld answering (scontrol ping)" 30 \
    as_host login "$k_login" env SLURM_CONF="$conf" scontrol ping
  local i
  for i in "${!k_nodes[@]}"; do
    supervise_slurmd "${k_nodes[$i]}" </dev/null >>"$log/slurmd-${k_nodes[$i]}.out" 2>&1 &
  done
  wait_for "all $nodes nodes idle in sinfo" "$timeout" all_nodes_idle
  say "up in $((SECONDS - started))s: $(node_range 0 $((nodes - 1))) idle; slurm: $(
    in_userland slurmctld -V); site: ${site:-none (plain)}${topology:+, topology/$topology}; plugin: $(
    [[ -e $plugin_so ]] && echo "$plugin_so ${args}" || echo none); state: $k_state"
}

# The login profile a site gives users of this userland's PyTorch, written to $user_env_file.
# Debian's python3-torch 2.6 (Debian 13) and 2.14 (unstable) are built without libuv, but
# PyTorch 2.4 and later ask TCPStore for libuv unless USE_LIBUV=0: every env:// rendezvous
# there, with or without --ddp, fails with "use_libuv was requested but PyTorch was built
# without libuv support". Sites with that torch set USE_LIBUV=0 (doc/slurm-releases.md); so does
# `run`. Older torch (Debian 12's 1.13) has no such switch: TypeError, nothing to set.
write_user_env() {
  : >"$user_env_file"
  local rc=0
  in_userland /usr/bin/python3 -c '
import sys
try:
    import torch.distributed as d
except ImportError:
    sys.exit(0)
try:
    d.TCPStore("127.0.0.1", 0, 1, True, use_libuv=True)
except TypeError:
    sys.exit(0)
except Exception:
    sys.exit(3)' >/dev/null 2>&1 || rc=$?
  if ((rc == 3)); then echo USE_LIBUV=0 >>"$user_env_file"; fi
  return 0
}

# Builds the plugin against RELEASE's headers, in its userland, from this checkout into
# build-slurm-RELEASE/ (configured there once, with the cluster tests pointed at RELEASE), and
# prints its path. Only the plugin: the full build is tests/run.sh's.
build_plugin() {
  local release=$1 dir=$k_repo/build-slurm-$1
  say "building the plugin against Slurm $release's headers in $dir"
  {
    if [[ ! -f $dir/CMakeCache.txt ]]; then
      "$k_userland" exec "$release" cmake -S "$k_repo" -B "$dir" -DDDP_WERROR=ON \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDDP_CLUSTER_SLURM="$release"
    fi
    "$k_userland" exec "$release" cmake --build "$dir" --target spank_ddp -j"$(nproc)"
  } >&2 || die "up: building the plugin for Slurm $release failed (above)"
  # Found, not assumed: where the build tree puts it is the source tree's business.
  find "$dir" -name spank_ddp.so -type f -print -quit | grep . ||
    die "up: no spank_ddp.so under $dir after the build"
}

cmd_status() {
  local ns rc=0
  echo "state: $k_state"
  echo "slurm: $(read -r r _ 2>/dev/null <"$release_file" && echo "$r ($(userland_root))" ||
    echo "this machine's")"
  echo "site: $(current_site | grep . || echo 'none (plain)')"
  echo "nodes: $(node_range 0 $((${#k_nodes[@]} - 1))) (${#k_nodes[@]})"
  local names shown
  names=$(our_namespaces)
  shown=$names
  if (($(wc -l <<<"$names") <= 8)); then echo "namespaces: $(tr '\n' ' ' <<<"$names")"; else
    # Hundreds of nodes: the count, and the processes of the login host, bridge and first node.
    echo "namespaces: $(wc -l <<<"$names")"
    shown=$(grep -E -e '-(login|br|node0*1)$' <<<"$names")
  fi
  echo "neighbour table: $(neigh_now) (gc_thresh1/2/3)$(
    [[ -e $k_neigh_dir/saved ]] && echo ", raised from $(cat "$k_neigh_dir/saved")")"
  for ns in $shown; do
    printf '  %-12s %s\n' "$ns" "$(ip netns pids "$ns" 2>/dev/null | xargs -r ps -o comm= -p | sort | uniq -c | xargs)"
  done
  echo "munged: $(munged_pid || echo 'not running')"
  echo "plugstack.conf: $(cat "$etc/plugstack.conf" 2>/dev/null || echo '(none)')"
  if [[ -e /run/netns/${k_ns_prefix}login && -f $conf ]]; then
    as_host login "$k_login" env SLURM_CONF="$conf" sinfo -N || rc=1
  else
    echo "cluster: down"; rc=1
  fi
  return "$rc"
}

cmd_run() {
  (($#)) || die "run: no command given (example: cluster.sh run srun -N3 hostname)"
  [[ -e /run/netns/${k_ns_prefix}login && -f $conf ]] || die "run: the cluster is not up (cluster.sh up)"
  # Commands must not inherit a Slurm job or a PyTorch environment from whoever runs them (a CI
  # job inside Slurm, a developer's shell): srun would propagate it into every task. DDP_*, the
  # plugin's own knobs, pass through. (Names by prefix expansion, not compgen in a subshell: the
  # suites call `run` some twelve thousand times.)
  local var unset_args=()
  for var in ${!SLURM_*} ${!SRUN_*} ${!SBATCH_*} ${!SALLOC_*} ${!PMI_*} ${!PMIX_*} ${!PET_*} \
             MASTER_ADDR MASTER_PORT WORLD_SIZE RANK LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK \
             GROUP_RANK NNODES NPROC_PER_NODE; do
    [[ -v $var ]] && unset_args+=(-u "$var")
  done
  # An emulated site's login environment: its stubs first on a plain system PATH (not the
  # caller's, whose python3 may be a virtualenv without torch), its modulefiles, and Lmod's
  # `module` in every bash through BASH_ENV, as Lmod's own profile script sets it. sbatch hands
  # this environment on to the job, as on a real login node.
  local site_env=() site=""
  read -r site 2>/dev/null <"$site_dir/name" || true
  if [[ -n $site ]]; then
    local path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    [[ -d $site_dir/bin ]] && path=$site_dir/bin:$path
    site_env=(PATH="$path" DDP_SITE="$site" DDP_SITE_DIR="$site_dir" MODULEPATH="$site_dir/modules"
              BASH_ENV="$k_lmod_init" LMOD_ALLOW_ROOT_USE=yes)
    for var in LOADEDMODULES _LMFILES_ ${!_ModuleTable*} ${!__LMOD_*} ${!LMOD_*} MODULEPATH_ROOT; do
      case $var in
        _ModuleTable*[!_]) ;;
        *) [[ -v $var ]] && unset_args+=(-u "$var") ;;
      esac
    done
  fi
  # The userland's login profile (write_user_env); the caller's own setting wins.
  local user_env=() line
  if [[ -f $user_env_file ]]; then
    while read -r line; do
      [[ -n $line && ! -v ${line%%=*} ]] && user_env+=("$line")
    done <"$user_env_file"
  fi
  local command=(env "${unset_args[@]}" SLURM_CONF="$conf" "${site_env[@]}" "${user_env[@]}" "$@")
  # exec: a signal for `cluster.sh run` (timeout, Ctrl-C) reaches srun itself, which then
  # cancels its step. The login host's namespaces are entered (login_holder), made afresh only
  # when nothing holds them.
  if login_holder; then
    # The working directory as userland.sh enter keeps it: the caller's when the holder's root
    # has it, else /. nsenter opens --wd before it changes root, hence the path through /proc.
    local dir=/
    [[ -d /proc/$holder/root$PWD ]] && dir=$PWD
    exec nsenter --target "$holder" --mount --uts --net --root --wd="/proc/$holder/root$dir" \
      "${command[@]}"
  fi
  launcher=(exec)
  as_host login "$k_login" "${command[@]}"
}

# The login host's namespaces (network, hostname, mounts: its /etc/hosts, nsswitch.conf and
# resolv.conf, and with up --slurm the userland as its root), held by one process from `up` to
# `down` ($run_dir/login.pid), which `run` enters with nsenter instead of making them again: a
# mount namespace, a hostname and three bind mounts, and on a release's cluster the userland's
# seven mounts and pivot_root, about 70 ms of CPU per `run` there. The files it binds are
# written in place by set-hosts and set-dns, so it sees their changes as a fresh one would.
start_login_holder() {
  # shellcheck disable=SC2016  # the pid is the inner shell's own, written by it
  start_daemon login "$k_login" login-holder \
    /bin/sh -c 'echo $$ >"$1.tmp" && mv "$1.tmp" "$1" && exec sleep infinity' login-holder "$run_dir/login.pid"
  wait_for "the login host's namespaces held ($run_dir/login.pid)" 10 login_holder
}

# Sets holder to the pid of the process holding the login host's namespaces; fails without one.
login_holder() {
  holder=""
  read -r holder 2>/dev/null <"$run_dir/login.pid" || true
  [[ $holder =~ ^[0-9]+$ && /proc/$holder/ns/net -ef /run/netns/${k_ns_prefix}login ]]
}

main() {
  local cmd=${1:-}
  (($#)) && shift
  load_nodes
  case $cmd in
    up) cmd_up "$@" ;;
    down)
      # Without root there is nothing this script could have started: a skip, not a failure.
      if [[ $(id -u) -ne 0 ]]; then say "skipped: not root"; exit "$k_skip"; fi
      cmd_down ;;
    status) cmd_status ;;
    run) cmd_run "$@" ;;
    set-plugstack) cmd_set_plugstack "$@" ;;
    install-plugin) cmd_install_plugin "$@" ;;
    set-plugstack-kind) cmd_set_plugstack_kind "$@" ;;
    set-hosts) cmd_set_hosts "$@" ;;
    set-dns) cmd_set_dns "$@" ;;
    check)
      local why; why=$(missing_prerequisite)
      if [[ -n $why ]]; then echo "$why"; exit "$k_skip"; fi ;;
    log | logs) log_tails ;;
    *) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
}

main "$@"
