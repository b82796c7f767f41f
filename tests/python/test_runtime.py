"""Threads run while arrays evaluate (the GIL is released), and a long loop of small ops leaks nothing: Python's
allocations (tracemalloc) and nuvec's active memory stay flat."""

import threading
import time

import nuvec.core as mx
from leaks import assert_flat


def test_python_threads_run_while_arrays_evaluate():
    progress = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            progress.append(1)
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    a = mx.random.uniform(shape=(1024, 1024))
    mx.eval(a)
    during = 0
    for _ in range(3):
        c = mx.tanh(a @ a) @ a
        before = len(progress)
        mx.eval(c)
        during += len(progress) - before
    stop.set()
    counter.join()
    assert during > 0  # the counter ran while eval computed


def test_two_threads_evaluate_together():
    results = {}

    def work(name, seed):
        key = mx.random.key(seed)
        x = mx.random.normal((256, 256), key=key)
        for _ in range(20):
            x = mx.tanh(x @ x.T / 256)
        results[name] = mx.sum(x).item()

    threads = [threading.Thread(target=work, args=(i, i)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = {}
    for i in range(2):
        key = mx.random.key(i)
        x = mx.random.normal((256, 256), key=key)
        for _ in range(20):
            x = mx.tanh(x @ x.T / 256)
        expected[i] = mx.sum(x).item()
    assert results == expected


def test_small_ops_do_not_leak():
    a = mx.array([1.0, 2.0, 3.0, 4.0])
    b = mx.array([4.0, 3.0, 2.0, 1.0])

    def run(n):
        for _ in range(n):
            c = a + b
            mx.eval(c)
            c.item() if c.size == 1 else c[0].item()

    assert_flat(run, 2000, 100_000)
