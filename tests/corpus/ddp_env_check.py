#!/usr/bin/env python3
"""The program the corpus jobs run on the embedded cluster instead of their training.

Every process of a job's launch pattern runs it as its program. It reads what a DDP program
reads (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE when set, MASTER_ADDR, MASTER_PORT),
and all processes meet over plain TCP at MASTER_ADDR: rank 0 listens, the others connect and
send what they saw. Rank 0 checks the world: every rank 0..WORLD_SIZE-1 exactly once, one
WORLD_SIZE, MASTER_ADDR and MASTER_PORT everywhere, MASTER_ADDR naming rank 0's host, local
ranks 0..n-1 on every host, WORLD_SIZE equal to --world; then it answers each process, and
every process prints one line:

    corpus-check rank R of W ok
    corpus-check world W ok master ADDR:PORT hosts H1,H2     (rank 0, after its own line)

Under torchrun (TORCHELASTIC_RUN_ID set) MASTER_PORT is the port of torchrun's own store, in
use: rank 0 then checks that it is listening, listens on a port of its own and publishes that
port in a file under --rundir (the nodes of the embedded cluster share /tmp); the meeting is
still a TCP connection to MASTER_ADDR.

--launch HOSTFILE: the job's program launches its own workers (launcher none): it runs once in
the batch shell, checks that HOSTFILE names the job's nodes, each with "slots=N", and starts N
workers per node with srun, each given RANK, LOCAL_RANK and WORLD_SIZE from the hostfile's order
as DeepSpeed's launcher does, and MASTER_ADDR and MASTER_PORT as the batch shell has them.
--ompi: ranks come from Open MPI's variables (OMPI_COMM_WORLD_RANK, ...), as a per-rank wrapper
of an mpirun job maps them.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time

k_timeout = 60.0


def fail(message):
    print(f"corpus-check: error: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def integer(name, env):
    value = env.get(name)
    if value is None or not value.isdigit():
        fail(f"{name}={value!r}: expected a non-negative integer")
    return int(value)


def seen(env, ompi):
    """What this process sees, as the DDP variables (or Open MPI's, mapped)."""
    if ompi:
        env = dict(env)
        env["RANK"] = env.get("OMPI_COMM_WORLD_RANK")
        env["LOCAL_RANK"] = env.get("OMPI_COMM_WORLD_LOCAL_RANK")
        env["WORLD_SIZE"] = env.get("OMPI_COMM_WORLD_SIZE")
    me = {name.lower(): integer(name, env) for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    me["master_port"] = integer("MASTER_PORT", env)
    me["master_addr"] = env.get("MASTER_ADDR") or fail("MASTER_ADDR is not set")
    if "LOCAL_WORLD_SIZE" in env:
        me["local_world_size"] = integer("LOCAL_WORLD_SIZE", env)
    me["host"] = socket.gethostname()
    return me


def addresses(name):
    try:
        return {info[4][0] for info in socket.getaddrinfo(name, None, socket.AF_INET)}
    except OSError as e:
        fail(f"cannot resolve {name!r}: {e}")


def verify(world, reports):
    """The problems with the world's reports, one string each."""
    problems = []
    ranks = sorted(r["rank"] for r in reports)
    if ranks != list(range(world)):
        problems.append(f"ranks {ranks}, expected 0..{world - 1} once each")
    for key in ("world_size", "master_addr", "master_port"):
        values = {str(r[key]) for r in reports}
        if len(values) != 1:
            problems.append(f"{key} differs between processes: {sorted(values)}")
    if any(r["world_size"] != world for r in reports):
        problems.append(f"WORLD_SIZE is not {world} everywhere")
    by_host = {}
    for r in reports:
        by_host.setdefault(r["host"], []).append(r)
    for host, rs in by_host.items():
        local = sorted(r["local_rank"] for r in rs)
        if local != list(range(len(rs))):
            problems.append(f"local ranks on {host}: {local}, expected 0..{len(rs) - 1}")
        if any(r.get("local_world_size", len(rs)) != len(rs) for r in rs):
            problems.append(f"LOCAL_WORLD_SIZE on {host} is not {len(rs)}")
    head = [r for r in reports if r["rank"] == 0]
    if head and not addresses(head[0]["master_addr"]) & addresses(head[0]["host"]):
        problems.append(f"MASTER_ADDR {head[0]['master_addr']} is not rank 0's host {head[0]['host']}")
    return problems


def send(sock, obj):
    sock.sendall(json.dumps(obj).encode() + b"\n")


def receive(sock):
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            fail("the peer closed the connection")
        data += chunk
    return json.loads(data)


def port_file(args, me):
    return os.path.join(args.rundir, f"port-{os.environ.get('SLURM_JOB_ID', 'none')}-"
                        f"{os.environ.get('SLURM_STEP_ID', 'none')}-{me['master_port']}")


def listen(args, me):
    """Rank 0's listening socket at MASTER_ADDR and its port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    elastic = "TORCHELASTIC_RUN_ID" in os.environ
    if elastic:
        # torchrun's store holds MASTER_PORT: it must be listening there.
        socket.create_connection((me["master_addr"], me["master_port"]), timeout=10).close()
    sock.bind((me["master_addr"], 0 if elastic else me["master_port"]))
    sock.listen(me["world_size"])
    port = sock.getsockname()[1]
    if elastic:
        tmp = port_file(args, me) + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.rename(tmp, port_file(args, me))
    return sock


def rank0(args, me):
    server = listen(args, me)
    server.settimeout(k_timeout)
    peers, reports = [], [me]
    while len(reports) < me["world_size"]:
        try:
            conn, _ = server.accept()
        except socket.timeout:
            fail(f"only {len(reports)} of {me['world_size']} processes reached rank 0")
        conn.settimeout(k_timeout)
        reports.append(receive(conn))
        peers.append(conn)
    problems = verify(args.world, reports)
    for conn in peers:
        send(conn, problems)
        conn.close()
    return problems, reports


def other(args, me):
    deadline = time.monotonic() + k_timeout
    port = me["master_port"]
    while True:
        try:
            if "TORCHELASTIC_RUN_ID" in os.environ:
                with open(port_file(args, me)) as f:
                    port = int(f.read())
            conn = socket.create_connection((me["master_addr"], port), timeout=5)
            break
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                fail(f"rank 0 is not listening at {me['master_addr']}:{port}")
            time.sleep(0.2)
    conn.settimeout(k_timeout)
    send(conn, me)
    return receive(conn)


def check(args):
    me = seen(os.environ, args.ompi)
    if me["rank"] == 0:
        problems, reports = rank0(args, me)
    else:
        problems, reports = other(args, me), None
    if problems:
        fail("; ".join(problems))
    print(f"corpus-check rank {me['rank']} of {me['world_size']} ok", flush=True)
    if reports:
        hosts = ",".join(sorted({r["host"] for r in reports}))
        print(f"corpus-check world {me['world_size']} ok master {me['master_addr']}:"
              f"{me['master_port']} hosts {hosts}", flush=True)


def launch(args):
    """Runs once in the batch shell: the hostfile, then N workers per node with srun."""
    nodes = subprocess.run(["scontrol", "show", "hostnames", os.environ["SLURM_JOB_NODELIST"]],
                           check=True, capture_output=True, text=True).stdout.split()
    with open(args.launch) as f:
        lines = [line.split() for line in f if line.strip()]
    hosts = [words[0] for words in lines]
    slots = {words[0]: int(words[1].removeprefix("slots=")) for words in lines
             if len(words) == 2 and words[1].startswith("slots=")}
    if hosts != nodes or len(slots) != len(hosts):
        fail(f"hostfile {args.launch}: {lines}, expected the job's nodes {nodes} with slots=N each")
    per_node = set(slots.values())
    if len(per_node) != 1:
        fail(f"hostfile {args.launch}: unequal slots {slots}")
    n = per_node.pop()
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        if not os.environ.get(name):
            fail(f"{name} is not set in the batch shell")
    print(f"corpus-check launcher: {len(hosts)} nodes x {n} slots from {args.launch}", flush=True)
    setup = ('export RANK=$((SLURM_NODEID * {n} + SLURM_LOCALID)) LOCAL_RANK=$SLURM_LOCALID '
             'WORLD_SIZE={w} LOCAL_WORLD_SIZE={n}; exec "$@"').format(n=n, w=n * len(hosts))
    command = ["srun", f"--nodes={len(hosts)}", f"--ntasks-per-node={n}", "bash", "-c", setup,
               "worker", sys.executable, os.path.abspath(__file__), "--world", str(args.world),
               "--rundir", args.rundir]
    sys.exit(subprocess.run(command).returncode)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=int, required=True, help="the expected WORLD_SIZE")
    parser.add_argument("--rundir", default="/tmp", help="where rank 0 publishes its own port")
    parser.add_argument("--launch", metavar="HOSTFILE", help="start the workers from HOSTFILE")
    parser.add_argument("--ompi", action="store_true", help="ranks from Open MPI's variables")
    args, _ = parser.parse_known_args()
    if args.launch:
        launch(args)
    else:
        check(args)


if __name__ == "__main__":
    main()
