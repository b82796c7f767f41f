"""mlx_lm's generation API (load, generate, stream_generate, make_sampler, make_logits_processors) over nuvec's C++
lm library."""

import queue
import threading
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple, Union

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


class Sampler:
    """mlx_lm's sampler: called on log-probabilities (V) or (B, V), it returns a token per row (int32), drawn by the C++
    lm sampling with these settings. generate and stream_generate take its settings whole."""

    def __init__(self, **settings):
        self.settings = settings
        self._params = _lm.SamplingParams(**settings)  # validates them now

    def __call__(self, logprobs):
        return self._params.sample(logprobs)


class LogitsProcessor:
    """mlx_lm's logits processor: called with the ids so far (T) or (B, T) and logits (V) or (B, V), it returns the
    logits (float32) after its logit bias or repetition penalty, applied by the C++ lm sampling."""

    def __init__(self, **settings):
        self.settings = settings
        self._params = _lm.SamplingParams(**settings)

    def __call__(self, tokens, logits):
        return self._params.process(tokens, logits)


def make_sampler(
    temp: float = 0.0,
    top_p: float = 0.0,
    min_p: float = 0.0,
    min_tokens_to_keep: int = 1,
    top_k: int = 0,
    xtc_probability: float = 0.0,
    xtc_threshold: float = 0.0,
    xtc_special_tokens: Optional[List[int]] = None,
) -> Sampler:
    """mlx_lm's make_sampler: the argmax at temp 0, else a draw at temperature temp after the top-k, top-p (0 or 1:
    off, as mlx_lm's) and min-p filters. XTC is not implemented."""
    if xtc_probability > 0.0:
        raise ValueError("[make_sampler] XTC sampling (xtc_probability > 0) is not supported by nuvec.lm.")
    return Sampler(temperature=temp, top_p=top_p if 0.0 < top_p < 1.0 else 1.0, min_p=min_p,
                   min_tokens_to_keep=min_tokens_to_keep, top_k=max(top_k, 0))


def make_logits_processors(
    logit_bias: Optional[Dict[int, float]] = None,
    repetition_penalty: Optional[float] = None,
    repetition_context_size: Optional[int] = 20,
) -> List[LogitsProcessor]:
    """mlx_lm's make_logits_processors: a processor adding logit_bias, and one applying the repetition penalty over
    the last repetition_context_size ids, for those given."""
    processors = []
    if logit_bias:
        processors.append(LogitsProcessor(logit_bias={int(k): float(v) for k, v in logit_bias.items()}))
    if repetition_penalty and repetition_penalty != 0.0:
        processors.append(LogitsProcessor(repetition_penalty=repetition_penalty,
                                          repetition_context_size=repetition_context_size))
    return processors


def _sampling_params(temp, top_p, top_k, seed, sampler, logits_processors):
    """The C++ generation's parameters: temp, top_p, top_k and seed, replaced by a sampler's settings and joined by
    the logits processors'. Generation runs in C++, so samplers and processors must be nuvec.lm's own."""
    settings = {"temperature": temp, "top_p": top_p, "top_k": top_k}
    if sampler is not None:
        if not isinstance(sampler, Sampler):
            raise TypeError("[stream_generate] sampler must come from nuvec.lm.make_sampler: generation runs in C++ "
                            "and calls no Python function per token.")
        settings.update(sampler.settings)
    for processor in logits_processors or []:
        if not isinstance(processor, LogitsProcessor):
            raise TypeError("[stream_generate] logits_processors must come from nuvec.lm.make_logits_processors: "
                            "generation runs in C++ and calls no Python function per token.")
        settings.update(processor.settings)
    return _lm.SamplingParams(**settings, seed=seed)


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
    sampler: Optional[Sampler] = None,
    logits_processors: Optional[List[LogitsProcessor]] = None,
) -> Iterator[GenerationResponse]:
    """Yields a GenerationResponse per generated token (greedy unless temp > 0, or as `sampler` from make_sampler
    says, after `logits_processors` from make_logits_processors). Generation runs on a thread of its own and stops
    at the next token once the iterator is closed."""
    ids = _prompt_ids(tokenizer, prompt)
    sampling = _sampling_params(temp, top_p, top_k, seed, sampler, logits_processors)
    responses = queue.Queue()
    stopped = threading.Event()
    done = object()

    def on_token(response):
        responses.put(GenerationResponse(**response))
        return not stopped.is_set()

    def run():
        try:
            _lm.stream_generate(model._loaded, ids, on_token, max_tokens, sampling)
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
