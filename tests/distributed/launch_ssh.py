#!/usr/bin/python3
"""nuvec launch's remote ranks, with ssh replaced (NUVEC_SSH) by a script that logs its arguments and runs the command
here as sshd would: in /bin/sh, with a bare environment, as a process of its own (ending the script does not end
the command). Hosts 127.0.0.2, 127.0.0.3, ... are this machine's loopback but not "this machine" to the launcher,
so it starts their ranks through ssh; 127.0.0.1 is started directly.

Checks, against the exact argv the launcher passes to ssh (host, then one command line holding the host file, the
working directory and the environment):
- the ranks on the "remote" hosts form a working ring with the local one (RANKS_PROGRAM passes);
- SIGTERM to the launcher reaches every remote rank by `ssh HOST kill -TERM PID`, their output is forwarded with
  the rank in front, and --env values (quotes, spaces) arrive intact in the same working directory;
- a failing rank's status is the launcher's, and the rank left running is killed over ssh after --grace.

usage: launch_ssh.py NUVEC_CLI RANKS_PROGRAM SIZE [RANKS_PROGRAM ARGS...]
"""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FAKE_SSH = r'''#!/usr/bin/python3
import json, os, subprocess, sys
with open(os.environ["FAKE_SSH_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\n")
if len(sys.argv) != 3:
    sys.exit("fake ssh: expected HOST COMMAND, got %r" % sys.argv[1:])
env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}
status = subprocess.run(["/bin/sh", "-c", sys.argv[2]], env=env, cwd=env["HOME"]).returncode
sys.exit(255 if status < 0 else status)  # as ssh reports a command ended by a signal
'''

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAILED: " + message)


def quoted(word):
    return "'" + word.replace("'", "'\\''") + "'"


def expected_script(launcher_pid, rank, hostfile_text, cwd, env, command):
    """The command line nuvec launch gives ssh for `rank` (apps/launch/launch.cpp's remote_script)."""
    remote_file = "/tmp/nuvec-hostfile-%d-%d.json" % (launcher_pid, rank)
    assignments = sorted(env) + [("NUVEC_RANK", str(rank)), ("MLX_RANK", str(rank)), ("NUVEC_HOSTFILE", remote_file),
                                 ("MLX_HOSTFILE", remote_file)]
    return ("printf %%s %s > %s && cd %s && echo nuvec-launch-pid $$ && exec env %s %s" %
            (quoted(hostfile_text), remote_file, quoted(cwd),
             " ".join("%s=%s" % (name, quoted(value)) for name, value in assignments),
             " ".join(quoted(word) for word in command)))


def alive(pid):
    """Whether `pid` runs (an orphan killed may stay a zombie until init reaps it)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return False
        except FileNotFoundError:
            return False
        time.sleep(0.05)
    return True


def ssh_log(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f]


launchers = []


def launch(args, env, cwd):
    """Starts nuvec launch in a session of its own, so that a failed check can end it with every rank it started."""
    process = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    launchers.append(process)
    return process


def remote_files(launcher, size):
    return ["/tmp/nuvec-hostfile-%d-%d.json" % (launcher.pid, r) for r in range(size)]


def main():
    work = tempfile.mkdtemp(prefix="nuvec-launch-ssh-")
    try:
        run_checks(work)
    finally:
        for process in launchers:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            # The host files the "remote" ranks wrote here.
            for path in remote_files(process, 8):
                if os.path.exists(path):
                    os.unlink(path)
        shutil.rmtree(work)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)


def run_checks(work):
    cli, ranks_program, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ranks_args = sys.argv[4:]
    ssh = os.path.join(work, "ssh")
    with open(ssh, "w") as f:
        f.write(FAKE_SSH)
    os.chmod(ssh, 0o755)
    log = os.path.join(work, "ssh.log")
    # The launcher's environment: forwarded are NUVEC_* and MLX_* but NUVEC_SSH.
    forwarded = {"NUVEC_DISTRIBUTED_TIMEOUT": os.environ.get("NUVEC_DISTRIBUTED_TIMEOUT", "60"),
                 "NUVEC_DEFAULT_DEVICE": "cpu"}
    launcher_env = dict(forwarded, PATH=os.environ["PATH"], HOME=os.environ.get("HOME", "/"), NUVEC_SSH=ssh,
                        FAKE_SSH_LOG=log, OTHER_VARIABLE="not forwarded")
    hosts = ["127.0.0.1"] + ["127.0.0.%d" % (r + 1) for r in range(1, size)]
    port = random.randrange(20000, 30000, 10)
    hostfile_text = json.dumps([["%s:%d" % (h, port + r)] for r, h in enumerate(hosts)], separators=(",", ":"))

    # 1. The ring: rank 0 here, the others "remote".
    command = [ranks_program, *ranks_args]
    run = launch([cli, "launch", "--hosts", ",".join(hosts), "--starting-port", str(port), "--", *command],
                 launcher_env, work)
    output, _ = run.communicate(timeout=120)
    print(output)
    check(run.returncode == 0, "the ring over ssh exited with status %d" % run.returncode)
    for r in range(size):
        check(re.search(r"^\[%d\] " % r, output, re.MULTILINE), "no output forwarded from rank %d" % r)
    check("nuvec-launch-pid" not in output, "a remote rank's process id line was forwarded")
    want = [[hosts[r], expected_script(run.pid, r, hostfile_text, work, forwarded.items(), command)]
            for r in range(1, size)]
    got = sorted(ssh_log(log))  # the ssh processes log as they start, in any order
    check(got == want, "ssh's arguments:\n  got  %s\n  want %s" % (got, want))
    os.unlink(log)

    # 2. SIGTERM reaches the remote ranks by their process ids; --env and the working directory arrive.
    mark = "it's a value with spaces"
    script = ('trap "echo stopped by TERM; exit 3" TERM; echo "ready $NUVEC_RANK $$ $(pwd) [$NUVEC_MARK]"; '
              'while :; do sleep 0.05; done')
    remote = hosts[1:]
    run = launch([cli, "launch", "--hosts", ",".join(remote), "--env", "NUVEC_MARK=" + mark, "--", "/bin/sh", "-c",
                  script], launcher_env, work)
    pids = {}
    deadline = time.monotonic() + 30
    lines = []
    while len(pids) < len(remote) and time.monotonic() < deadline:
        line = run.stdout.readline()
        if not line:
            break
        lines.append(line)
        found = re.match(r"\[(\d+)\] ready (\d+) (\d+) (.*) \[(.*)\]$", line.rstrip("\n"))
        if found:
            check(found.group(1) == found.group(2), "rank %s got NUVEC_RANK %s" % (found.group(1), found.group(2)))
            check(found.group(4) == work, "rank %s ran in %s, not %s" % (found.group(1), found.group(4), work))
            check(found.group(5) == mark, "rank %s got NUVEC_MARK [%s]" % (found.group(1), found.group(5)))
            pids[int(found.group(1))] = int(found.group(3))
    check(len(pids) == len(remote), "not every rank became ready: %s" % "".join(lines))
    run.send_signal(signal.SIGTERM)
    try:
        rest, _ = run.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        rest, _ = run.communicate()
        check(False, "the launcher and its ranks still ran 15 s after SIGTERM")
    output = "".join(lines) + rest
    print(output)
    for r in pids:
        check("[%d] stopped by TERM" % r in output, "rank %d did not get SIGTERM" % r)
    check(run.returncode == 3, "the launcher exited with %d, not the ranks' 3" % run.returncode)
    got = [entry for entry in ssh_log(log) if entry[1].startswith("kill")]
    want = [[remote[r], "kill -TERM %d" % pids[r]] for r in sorted(pids)]
    check(sorted(got) == sorted(want), "the signal's ssh commands:\n  got  %s\n  want %s" % (got, want))
    os.unlink(log)

    # 2b. mlx.launch's host file: reached by "ssh", listening on the first of "ips" at --starting-port's ports.
    mlx_hosts = os.path.join(work, "mlx_hosts.json")
    with open(mlx_hosts, "w") as f:
        json.dump([{"ssh": "127.0.0.1", "ips": ["127.0.0.1"]}, {"ssh": "127.0.0.2", "ips": ["127.0.0.2", "10.0.0.9"]}], f)
    command = ["/bin/sh", "-c", 'echo "rank $NUVEC_RANK of $(cat "$NUVEC_HOSTFILE")"']
    run = launch([cli, "launch", "--hostfile", mlx_hosts, "--starting-port", str(port), "--", *command],
                 launcher_env, work)
    output, _ = run.communicate(timeout=60)
    print(output)
    ring = json.dumps([["127.0.0.1:%d" % port], ["127.0.0.2:%d" % (port + 1)]], separators=(",", ":"))
    for r in range(2):
        check("[%d] rank %d of %s\n" % (r, r, ring) in output, "rank %d did not read the ring's host file %s" % (r, ring))
    want = [["127.0.0.2", expected_script(run.pid, 1, ring, work, forwarded.items(), command)]]
    check(ssh_log(log) == want, "ssh's arguments for an mlx.launch host file:\n  got  %s\n  want %s" %
          (ssh_log(log), want))
    os.unlink(log)

    # 3. A rank that fails gives its status; the one left running is killed over ssh after the grace period.
    script = ('echo "ready $$"; if [ "$NUVEC_RANK" = 1 ]; then sleep 0.3; exit 7; fi; '
              'while :; do sleep 0.05; done')
    two = ["127.0.0.2", "127.0.0.3"]
    run = launch([cli, "launch", "--hosts", ",".join(two), "--grace", "0.5", "--", "/bin/sh", "-c", script],
                 launcher_env, work)
    output, _ = run.communicate(timeout=60)
    print(output)
    check(run.returncode == 7, "the launcher exited with %d, not the failing rank's 7" % run.returncode)
    rank0 = re.search(r"^\[0\] ready (\d+)$", output, re.MULTILINE)
    check(rank0 is not None, "rank 0 did not start")
    if rank0:
        got = [entry for entry in ssh_log(log) if entry[1].startswith("kill")]
        check(got == [[two[0], "kill -KILL %s" % rank0.group(1)]], "the kill's ssh commands: %s" % got)
        check(not alive(int(rank0.group(1))), "rank 0 (pid %s) still runs" % rank0.group(1))



if __name__ == "__main__":
    main()
