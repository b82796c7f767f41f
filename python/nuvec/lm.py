"""mlx_lm's generation API (load, generate, stream_generate) over nuvec's C++ lm library."""

import queue
import threading
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple, Union

import nuvec.core  # noqa: F401  (registers the translation of nuvec's errors into Python exceptions)
from nuvec import _lm


class Model:
    """A loaded language model (the C++ model with its generation defaults)."""

    def __init__(self, loaded):
        self._loaded = loaded

    @property
    def model_type(self) -> str:
        return self._loaded.model_type


class TokenizerWrapper:
    """The model's tokenizer, with mlx_lm's encode, decode and eos_token_id."""

    def __init__(self, loaded):
        self._loaded = loaded

    def encode(self, text: str, add_special_tokens: bool = True) -> List[int]:
        return self._loaded.encode(text, add_special_tokens)

    def decode(self, ids: List[int], skip_special_tokens: bool = False) -> str:
        return self._loaded.decode(list(ids), skip_special_tokens)

    @property
    def eos_token_id(self) -> Optional[int]:
        return self._loaded.eos_token_id


@dataclass
class GenerationResponse:
    """One generated token, with mlx_lm's fields (peak_memory in GB) and the token's log-probability."""

    text: str
    token: int
    logprob: float
    from_draft: bool
    prompt_tokens: int
    prompt_tps: float
    generation_tokens: int
    generation_tps: float
    peak_memory: float
    finish_reason: Optional[str]


def load(path: str) -> Tuple[Model, TokenizerWrapper]:
    """Loads a Hugging Face or MLX model folder, or a GGUF file, as (model, tokenizer)."""
    loaded = _lm.load(str(path))
    return Model(loaded), TokenizerWrapper(loaded)


def _prompt_ids(tokenizer, prompt) -> List[int]:
    return tokenizer.encode(prompt) if isinstance(prompt, str) else [int(t) for t in prompt]


def stream_generate(
    model: Model,
    tokenizer: TokenizerWrapper,
    prompt: Union[str, List[int]],
    max_tokens: int = 256,
    temp: float = 0.0,
    top_p: float = 1.0,
    top_k: int = 0,
    seed: Optional[int] = None,
) -> Iterator[GenerationResponse]:
    """Yields a GenerationResponse per generated token (greedy unless temp > 0). Generation runs on a thread of its
    own and stops at the next token once the iterator is closed."""
    ids = _prompt_ids(tokenizer, prompt)
    responses = queue.Queue()
    stopped = threading.Event()
    done = object()

    def on_token(response):
        responses.put(GenerationResponse(**response))
        return not stopped.is_set()

    def run():
        try:
            _lm.stream_generate(model._loaded, ids, on_token, max_tokens, temp, top_p, top_k, seed)
            responses.put(done)
        except BaseException as error:  # handed to the consumer's thread
            responses.put(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    try:
        while True:
            item = responses.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stopped.set()
        worker.join()


def generate(
    model: Model,
    tokenizer: TokenizerWrapper,
    prompt: Union[str, List[int]],
    verbose: bool = False,
    **kwargs,
) -> str:
    """The whole generated text (keyword arguments as stream_generate's); verbose prints it as it comes and the
    speeds after."""
    text = ""
    last = None
    for response in stream_generate(model, tokenizer, prompt, **kwargs):
        text += response.text
        last = response
        if verbose:
            print(response.text, end="", flush=True)
    if verbose and last is not None:
        print()
        print(f"Prompt: {last.prompt_tokens} tokens, {last.prompt_tps:.3f} tokens-per-sec")
        print(f"Generation: {last.generation_tokens} tokens, {last.generation_tps:.3f} tokens-per-sec")
        print(f"Peak memory: {last.peak_memory:.3f} GB")
    return text
