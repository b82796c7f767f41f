"""mlx_lm's generation API (load, generate, stream_generate, make_sampler, make_logits_processors, and its
TokenizerWrapper with apply_chat_template and a streaming detokenizer) over nuvec's C++ lm library."""

import json
import queue
import threading
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Set, Tuple, Union

import nuvec.core  # noqa: F401  (registers the translation of nuvec's errors into Python exceptions)
from nuvec import _lm
from nuvec.utils import tree_unflatten


class Model:
    """A loaded language model (the C++ model with its generation defaults)."""

    def __init__(self, loaded):
        self._loaded = loaded

    @property
    def model_type(self) -> str:
        return self._loaded.model_type

    def parameters(self) -> dict:
        """The parameters as a nested dict (mlx.nn.Module's form); on a model split across processes, this
        process's part."""
        return tree_unflatten(self._loaded.parameters())


class StreamingDetokenizer:
    """mlx_lm's streaming detokenizer: add_token one id at a time, then `last_segment` is the text that became final
    since it was last read (never part of a character), `text` all of it and `tokens` the ids; finalize() adds what
    was held back."""

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer
        self.reset()

    def reset(self):
        self._stream = self._tokenizer.detokenizer()
        self.text = ""
        self.tokens = []
        self.offset = 0

    def add_token(self, token: int):
        self.tokens.append(int(token))
        self.text += self._stream.add(int(token))

    def finalize(self):
        self.text += self._stream.finish()

    @property
    def last_segment(self) -> str:
        segment = self.text[self.offset:]
        self.offset = len(self.text)
        return segment


class TokenizerWrapper:
    """The model's tokenizer with mlx_lm's TokenizerWrapper surface: encode, decode, the special tokens, eos_token_ids,
    a streaming detokenizer and transformers' apply_chat_template."""

    def __init__(self, loaded):
        self._loaded = loaded
        self._tokenizer = loaded.tokenizer
        self._detokenizer = StreamingDetokenizer(self._tokenizer)

    def encode(self, text: str, add_special_tokens: bool = True) -> List[int]:
        return self._tokenizer.encode(text, add_special_tokens)

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        return self._tokenizer.decode([int(t) for t in ids], skip_special_tokens)

    def convert_tokens_to_ids(self, tokens):
        """transformers': the id of a token (None when unknown), or a list of them."""
        if isinstance(tokens, str):
            return self._tokenizer.token_to_id(tokens)
        return [self._tokenizer.token_to_id(t) for t in tokens]

    def convert_ids_to_tokens(self, ids):
        """transformers': the token of an id, or a list of them."""
        if isinstance(ids, int):
            return self._tokenizer.id_to_token(ids)
        return [self._tokenizer.id_to_token(int(i)) for i in ids]

    @property
    def vocab_size(self) -> int:
        return self._tokenizer.vocab_size

    @property
    def bos_token(self) -> Optional[str]:
        return self._tokenizer.bos_token

    @property
    def bos_token_id(self) -> Optional[int]:
        return self._tokenizer.bos_id

    @property
    def eos_token(self) -> Optional[str]:
        return self._tokenizer.eos_token

    @property
    def eos_token_id(self) -> Optional[int]:
        return self._tokenizer.eos_id

    @property
    def eos_token_ids(self) -> Set[int]:
        """What ends generation: the generation config's EOS ids, the tokenizer's EOS and end-of-turn ids."""
        ids = set(self._loaded.eos_token_ids)
        ids.update(i for i in (self._tokenizer.eos_id, self._tokenizer.eot_id) if i is not None)
        return ids

    @property
    def chat_template(self) -> Optional[str]:
        templates = dict(self._tokenizer.chat_templates)
        return templates.get("default")

    @property
    def detokenizer(self) -> StreamingDetokenizer:
        """The wrapper's streaming detokenizer (call reset() before a new text, as with mlx_lm's)."""
        return self._detokenizer

    def token_bytes(self, token: int) -> bytes:
        """The bytes a token adds in the middle of a text, part of a character included."""
        return self._tokenizer.token_bytes(int(token))

    def apply_chat_template(
        self,
        conversation,
        tools=None,
        documents=None,
        chat_template: Optional[str] = None,
        add_generation_prompt: bool = False,
        continue_final_message: bool = False,
        tokenize: bool = True,
        return_dict: bool = False,
        **kwargs,
    ):
        """transformers' apply_chat_template: the prompt the chat template makes of `conversation` (a list of
        {"role", "content"} dicts), as token ids (tokenize=True, the default, without adding special tokens again),
        or as text. chat_template names one of the tokenizer's templates or is a template's source; the other keyword
        arguments become template variables (enable_thinking=..., ...)."""
        if continue_final_message and add_generation_prompt:
            raise ValueError("continue_final_message and add_generation_prompt are not compatible: use one of them.")
        names = {name for name, _ in self._tokenizer.chat_templates}
        template_name = chat_template if chat_template in names else ""
        template_source = chat_template if chat_template is not None and chat_template not in names else ""
        text = self._tokenizer.apply_chat_template(
            json.dumps(list(conversation)), json.dumps(tools), json.dumps(documents), add_generation_prompt,
            json.dumps(kwargs), template_name, template_source)
        if continue_final_message:
            text = _cut_after_final_message(text, conversation[-1]["content"])
        if not tokenize:
            return text
        ids = self.encode(text, add_special_tokens=False)
        return {"input_ids": ids, "attention_mask": [1] * len(ids)} if return_dict else ids


def _cut_after_final_message(text: str, content) -> str:
    """transformers' continue_final_message: the prompt ends where the last message's text does, so the model goes on
    with it instead of starting a new turn."""
    if isinstance(content, (list, tuple)):
        texts = [part["text"] for part in content if isinstance(part, dict) and "text" in part]
        content = texts[-1] if texts else ""
    final = str(content).strip()
    end = text.rfind(final)
    if not final or end < 0:
        raise ValueError("continue_final_message: the final message's text does not appear in the rendered prompt.")
    return text[:end + len(final)]


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


def load(path: str, group=None, pipeline: bool = False) -> Tuple[Model, TokenizerWrapper]:
    """Loads a Hugging Face or MLX model folder, or a GGUF file, as (model, tokenizer). With a
    nuvec.core.distributed.Group of several processes (each runs the same program, started by `nuvec launch` or
    mpirun), every process loads and computes its part of the model: its slices of each layer, or with pipeline=True
    its run of layers. Generation then runs on every process alike."""
    loaded = _lm.load(str(path), group, pipeline)
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
    the logits processors' when they come from make_sampler and make_logits_processors; any other callables are
    returned to be called each step: (params, processors, sampler)."""
    settings = {"temperature": temp, "top_p": top_p, "top_k": top_k}
    custom_sampler = None
    if isinstance(sampler, Sampler):
        settings.update(sampler.settings)
    elif sampler is not None:
        if not callable(sampler):
            raise TypeError("[stream_generate] sampler must be callable (log-probabilities -> token).")
        custom_sampler = sampler
    custom_processors = []
    for processor in logits_processors or []:
        if isinstance(processor, LogitsProcessor):
            settings.update(processor.settings)
        elif callable(processor):
            custom_processors.append(processor)
        else:
            raise TypeError("[stream_generate] logits_processors must be callables (tokens, logits -> logits).")
    return _lm.SamplingParams(**settings, seed=seed), custom_processors, custom_sampler


def _prompt_ids(tokenizer, prompt) -> List[int]:
    """mlx_lm's rule: a text prompt gets the tokenizer's special tokens unless it already starts with the BOS token
    (a chat template's text usually does)."""
    if not isinstance(prompt, str):
        return [int(t) for t in prompt]
    bos = tokenizer.bos_token
    return tokenizer.encode(prompt, add_special_tokens=bos is None or not prompt.startswith(bos))


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
    """Yields a GenerationResponse per generated token (greedy unless temp > 0, or as `sampler` says, after
    `logits_processors`). Samplers and processors from make_sampler and make_logits_processors run in C++; any other
    callables are called each step as mlx_lm calls them, processor(tokens, logits) -> logits on the ids so far (T)
    and logits (1, V) before the C++ ones, sampler(logprobs) -> token on (1, V). Reported log-probabilities stay the
    model's own. Generation runs on a thread of its own and stops at the next token once the iterator is closed."""
    ids = _prompt_ids(tokenizer, prompt)
    sampling, processors, custom_sampler = _sampling_params(temp, top_p, top_k, seed, sampler, logits_processors)
    responses = queue.Queue()
    stopped = threading.Event()
    done = object()

    def on_token(response):
        responses.put(GenerationResponse(**response))
        return not stopped.is_set()

    def run():
        try:
            _lm.stream_generate(model._loaded, ids, on_token, max_tokens, sampling, processors, custom_sampler)
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
