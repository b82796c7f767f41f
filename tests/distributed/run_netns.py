#!/usr/bin/python3
"""Runs a distributed program on the TCP ring with each rank in its own network namespace, as if on separate hosts:
SIZE namespaces, each with one interface (10.77.0.1, 10.77.0.2, ...) on a bridge that lives in a namespace of its
own, and a host file of those addresses. Every namespace is removed afterwards, also when the run fails or is
interrupted; names carry this run's process id, so concurrent runs do not collide, and namespaces left by runs that
were killed outright are removed by the next run.

usage: run_netns.py direct SIZE PROGRAM ARGS...
       run_netns.py launch SIZE NUVEC_CLI PROGRAM ARGS...
direct: starts rank r with `ip netns exec` in namespace r, with NUVEC_RANK/MLX_RANK and the host file.
launch: runs `NUVEC_CLI launch --hostfile F -- PROGRAM ARGS`, its ssh replaced (NUVEC_SSH) by a script that runs
        the remote command in the namespace that owns the host's address, so the launcher's remote path starts the
        ranks.
Exits 77 (CTest's skip) when network namespaces cannot be created here (not root, or no CAP_NET_ADMIN).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PREFIX = "nuvec-test-"
PORT = 40123  # each namespace has its own ports, so any port is free
LIMIT_SECONDS = 60
SKIP = 77


def ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def namespaces():
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in listing.splitlines() if line.strip()]


def remove_stale():
    """Removes the namespaces of runs whose driver no longer exists (killed before it could clean up)."""
    for name in namespaces():
        match = re.fullmatch(re.escape(PREFIX) + r"(\d+)-\w+", name)
        if match and not os.path.exists("/proc/%s" % match.group(1)):
            ip("netns", "del", name, check=False)


def address(rank):
    return "10.77.0.%d" % (rank + 1)


def create(size, names):
    """The hub namespace with the bridge, then one namespace per rank joined to it by a veth pair."""
    hub = names[-1]
    ip("netns", "add", hub)
    ip("-n", hub, "link", "add", "br0", "type", "bridge")
    ip("-n", hub, "link", "set", "br0", "up")
    for rank in range(size):
        ns = names[rank]
        ip("netns", "add", ns)
        ip("link", "add", "name", "eth0", "netns", ns, "type", "veth", "peer", "name", "port%d" % rank, "netns", hub)
        ip("-n", hub, "link", "set", "port%d" % rank, "master", "br0")
        ip("-n", hub, "link", "set", "port%d" % rank, "up")
        ip("-n", ns, "addr", "add", address(rank) + "/24", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        ip("-n", ns, "link", "set", "lo", "up")


def main():
    mode, size = sys.argv[1], int(sys.argv[2])
    rest = sys.argv[3:]
    if mode not in ("direct", "launch") or size < 2 or not rest:
        sys.exit(__doc__)
    # SIGTERM (a test timeout, a user) ends the run through the clean-up below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("run_netns.py: terminated"))
    remove_stale()
    names = ["%s%d-%d" % (PREFIX, os.getpid(), r) for r in range(size)] + ["%s%d-hub" % (PREFIX, os.getpid())]
    work = tempfile.mkdtemp(prefix="nuvec-netns-")
    ranks = []
    logs = []  # files, not pipes: a rank must never block on output nobody reads yet
    try:
        if shutil.which("ip") is None:
            print("SKIP: cannot create network namespaces here: iproute2's `ip` is not installed")
            sys.exit(SKIP)
        try:
            create(size, names)
        except subprocess.CalledProcessError as e:
            if "Operation not permitted" in e.stderr or "Permission denied" in e.stderr:
                print("SKIP: cannot create network namespaces here (`%s`: %s); the test needs root or "
                      "CAP_NET_ADMIN" % (" ".join(e.cmd), e.stderr.strip()))
                sys.exit(SKIP)
            sys.exit("run_netns.py: setting up the namespaces failed: `%s`: %s" % (" ".join(e.cmd), e.stderr.strip()))
        hostfile = os.path.join(work, "hosts.json")
        with open(hostfile, "w") as f:
            json.dump([["%s:%d" % (address(r), PORT)] for r in range(size)], f)
        if mode == "direct":
            for r in range(size):
                env = ["NUVEC_RANK=%d" % r, "MLX_RANK=%d" % r, "NUVEC_HOSTFILE=" + hostfile, "MLX_HOSTFILE=" + hostfile]
                command = ["ip", "netns", "exec", names[r], "env", *env, *rest]
                logs.append(open(os.path.join(work, "rank%d.log" % r), "w+"))
                ranks.append(subprocess.Popen(command, stdout=logs[-1], stderr=subprocess.STDOUT))
        else:
            # The launcher's ssh: `SSH HOST COMMAND`, run by sh in the namespace holding HOST's address.
            ssh = os.path.join(work, "ssh")
            cases = "".join('  %s) ns=%s ;;\n' % (address(r), names[r]) for r in range(size))
            with open(ssh, "w") as f:
                f.write('#!/bin/sh\ncase "$1" in\n%s  *) echo "no namespace for $1" >&2; exit 255 ;;\nesac\n'
                        'exec ip netns exec "$ns" sh -c "$2"\n' % cases)
            os.chmod(ssh, 0o755)
            command = [rest[0], "launch", "--hostfile", hostfile, "--", *rest[1:]]
            logs.append(open(os.path.join(work, "launch.log"), "w+"))
            ranks.append(subprocess.Popen(command, stdout=logs[-1], stderr=subprocess.STDOUT,
                                          env=dict(os.environ, NUVEC_SSH=ssh)))
        deadline = time.monotonic() + LIMIT_SECONDS
        failed = False
        for r, process in enumerate(ranks):
            try:
                process.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                print("rank %d did not finish within %d s" % (r, LIMIT_SECONDS))
            logs[r].seek(0)
            output = logs[r].read()
            prefix = "[%d] " % r if mode == "direct" else ""
            sys.stdout.write("".join(prefix + line + "\n" for line in output.splitlines()))
            if process.returncode != 0:
                print("%s exited with status %d" % ("rank %d" % r if mode == "direct" else "nuvec launch",
                                                    process.returncode))
                failed = True
        sys.exit(1 if failed else 0)
    finally:
        for process in ranks:
            if process.poll() is None:
                process.kill()
                process.wait()
        for log in logs:
            log.close()
        if mode == "launch" and ranks:
            # The host files the launcher's "remote" ranks wrote (the namespaces share this file system).
            for r in range(size):
                path = "/tmp/nuvec-hostfile-%d-%d.json" % (ranks[0].pid, r)
                if os.path.exists(path):
                    os.unlink(path)
        for name in names:
            if name in namespaces():
                ip("netns", "del", name, check=False)
        for entry in os.listdir(work):
            os.unlink(os.path.join(work, entry))
        os.rmdir(work)


if __name__ == "__main__":
    main()
