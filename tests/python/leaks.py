"""A shared check for the leak tests: a loop of small ops leaves Python's allocations and nuvec's active memory flat."""

import tracemalloc

import nuvec.core as mx


def assert_flat(run, warm_up, calls, bound=64 * 1024):
    """Runs run(warm_up) to fill caches, then run(calls), over which neither tracemalloc's traced memory nor
    mx.get_active_memory() may grow by more than `bound` bytes."""
    run(warm_up)
    active = mx.get_active_memory()
    tracemalloc.start()
    first, _ = tracemalloc.get_traced_memory()
    run(calls)
    last, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert last - first < bound
    assert mx.get_active_memory() <= active + bound
