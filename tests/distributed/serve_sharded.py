#!/usr/bin/python3
"""nuvec serve under nuvec launch -n N shards the model across the ranks: rank 0 serves HTTP and the others follow
its batches. The same requests (sent together, so they share batches) go to a server of one process and to one of
N ranks over a tiny random Llama folder (tiny_llama.py): a greedy completion from token ids, one from text, and a
sampled one with a seed must come back with the same text. A response_format constraint, which the other ranks
cannot follow, is refused with 400. SIGTERM to the launcher stops every rank, and it exits 0.

usage: serve_sharded.py NUVEC RANKS WORK_DIR
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from tiny_llama import write_tiny_llama

nuvec, ranks, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
model = os.path.join(work, "model")
write_tiny_llama(model)

requests = [{"prompt": [5, 17, 33, 8, 41], "max_tokens": 12, "temperature": 0},
            {"prompt": "w9 w12 w40", "max_tokens": 10, "temperature": 0},
            {"prompt": [5, 17, 33, 8, 41], "max_tokens": 10, "temperature": 2.0, "seed": 3}]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(base, body):
    request = urllib.request.Request(base + "/v1/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def serve(prefix):
    """Starts the server, sends the requests together, checks the refusal, stops it; returns the texts and the
    output."""
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    log = open(os.path.join(work, "%s.log" % ("one" if not prefix else "launched")), "w+")
    server = subprocess.Popen(prefix + [nuvec, "serve", "--model", "tiny=" + model, "--port", str(port)],
                              stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while True:
        assert server.poll() is None and time.time() < deadline, "the server did not start"
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as response:
                if response.status == 200:
                    break
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.1)
    answers = [None] * len(requests)

    def ask(i):
        answers[i] = post(base, dict(requests[i], model="tiny"))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    status, refused = post(base, {"model": "tiny", "prompt": "w5", "max_tokens": 2,
                                  "response_format": {"type": "json_object"}})
    server.send_signal(signal.SIGTERM)
    code = server.wait(timeout=60)
    log.seek(0)
    output = log.read()
    assert code == 0, ("the server did not stop cleanly", code, output)
    for status_and_body in answers:
        assert status_and_body[0] == 200, (status_and_body, output)
    return [body["choices"][0]["text"] for _, body in answers], (status, refused), output


one, _, _ = serve([])
assert all(len(text.split()) > 3 for text in one), one
many, (status, refused), output = serve([nuvec, "launch", "-n", str(ranks), "--"])
assert many == one, (many, one, output)
assert status == 400 and "sharded" in refused["error"]["message"], refused
for r in range(1, ranks):
    assert "[%d] nuvec serve: rank %d of %d follows rank 0" % (r, r, ranks) in output, output
print("%d ranks answered %s, as one process did" % (ranks, many))
