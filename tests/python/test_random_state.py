"""mx.random.state as MLX code uses it: the global key in a list, which moves with each draw, can be set, and, given
to compile as state (inputs= and outputs=), makes a compiled function draw new numbers at every call, the numbers
the same function draws eagerly (nn.Dropout's C++ draws included)."""

from functools import partial

import numpy as np
import pytest

import nuvec.core as mx
import nuvec.nn as nn


def key_words(key):
    return np.array(key).tolist()


def test_state_is_a_list_holding_the_global_key():
    mx.random.seed(3)
    state = mx.random.state
    assert isinstance(state, list) and len(state) == 1
    assert state[0].dtype == mx.uint32 and state[0].shape == (2,)
    assert key_words(state[0]) == [0, 3]
    assert mx.random.state is state


def test_draws_move_the_key_and_a_written_key_is_used():
    mx.random.seed(11)
    key = mx.random.state[0]
    kept, drawn = mx.random.split(key)
    sample = mx.random.uniform(shape=(4,))
    np.testing.assert_array_equal(np.array(sample), np.array(mx.random.uniform(shape=(4,), key=drawn)))
    assert key_words(mx.random.state[0]) == key_words(kept)
    mx.random.state[0] = mx.random.key(7)
    kept, drawn = mx.random.split(mx.random.key(7))
    np.testing.assert_array_equal(np.array(mx.random.normal((3,))), np.array(mx.random.normal((3,), key=drawn)))
    with pytest.raises(TypeError, match="random.state"):
        mx.random.state[0] = 5
    with pytest.raises(ValueError, match="uint32"):
        mx.random.state[0] = mx.array([1, 2])
    assert key_words(mx.random.state[0]) == key_words(kept)  # the refused keys changed nothing


def draws(x):
    return x + mx.random.uniform(shape=x.shape), mx.random.normal(x.shape)


def test_compiled_function_with_the_state_draws_as_eager_code_does():
    x = mx.zeros((5,))
    mx.random.seed(42)
    eager = [[np.array(a) for a in draws(x)] for _ in range(3)]
    mx.random.seed(42)
    state = [mx.random.state]
    compiled = mx.compile(draws, inputs=state, outputs=state)
    for expected in eager:
        got = compiled(x)
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(np.array(a), b)
    assert not np.array_equal(eager[0][0], eager[1][0])
    # The compiled calls moved the key as the eager ones did: the next eager draw is the same.
    after_compiled = np.array(mx.random.uniform(shape=(2,)))
    mx.random.seed(42)
    for _ in range(3):
        draws(x)
    np.testing.assert_array_equal(after_compiled, np.array(mx.random.uniform(shape=(2,))))


def test_without_the_state_a_compiled_draw_is_a_constant_of_its_trace():
    compiled = mx.compile(lambda x: x + mx.random.uniform(shape=(3,)))
    x = mx.zeros((3,))
    np.testing.assert_array_equal(np.array(compiled(x)), np.array(compiled(x)))


def test_compiled_training_step_with_dropout_draws_a_new_mask_each_step():
    mx.random.seed(0)
    dropout = nn.Dropout(0.5)
    state = [mx.random.state]

    @partial(mx.compile, inputs=state, outputs=state)
    def masked(x):
        return dropout(x)

    x = mx.ones((64,))
    masks = [np.array(masked(x)) != 0 for _ in range(3)]
    assert not np.array_equal(masks[0], masks[1]) and not np.array_equal(masks[1], masks[2])
    mx.random.seed(0)
    for mask in masks:
        np.testing.assert_array_equal(np.array(dropout(x)) != 0, mask)


def test_a_compiled_call_that_raises_leaves_the_key_usable():
    mx.random.seed(5)
    before = key_words(mx.random.state[0])
    state = [mx.random.state]

    def fails(x):
        mx.random.uniform(shape=(2,))
        raise ValueError("on purpose")

    with pytest.raises(ValueError, match="on purpose"):
        mx.compile(fails, inputs=state, outputs=state)(mx.zeros((2,)))
    assert key_words(mx.random.state[0]) == before
    assert mx.random.uniform(shape=(2,)).shape == (2,)
