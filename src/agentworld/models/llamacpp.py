"""The ``llamacpp`` backend: a GGUF file run by llama.cpp (``llama-cpp-python``) on the CPU.

A llama.cpp context is not thread-safe, so one worker thread owns it and every request
reaches it through a queue. The worker batches continuously: the context holds up to
``max_batch`` sequences, each step decodes one token of every running sequence in a single
``llama_decode`` call, and a new request joins as soon as a slot is free. The prompt is the
model's own chat template (GGUF metadata) rendered the way transformers renders it, so the
tokens match the ``hf`` path.

Each slot has a KV cache of its own (llama.cpp's non-unified cache): in one shared pool every
sequence's attention ran over every cached token, which made 16 concurrent requests slower
than one (``benchmarks/embedded_speed.py``). A finished request's prompt stays in its slot,
and a new request takes the free slot that shares the most of its prompt and computes only
the rest: a simulator session's next step re-reads its whole history, so this skips most of
its prompt. Only whole prompt chunks are reused (chunks start at multiples of the batch
size), so the cache holds bit for bit what reading the prompt afresh computes. Prompts are
read a chunk at a time between decode steps, so a long prompt delays the running sequences
by one chunk, not by the whole prompt.

Sampling is greedy at temperature 0 (the argmax, as ``hf``). Above 0 it is numpy
sampling (temperature, top-k, top-p) seeded per sample with ``seed + i``: reproducible
here, but not the same draws as torch's.

Greedy requests may draft (``draft=K``, prompt-lookup decoding as in llama.cpp's lookup
example and transformers' ``prompt_lookup_num_tokens``): a world model's answer copies long
spans of its prompt (earlier observations, retrieved neighbours), so the up to K tokens that
followed the latest earlier occurrence of the sequence's last 3 (else 2, else 1) tokens are
guessed next. They are decoded in the same ``llama_decode`` as the sequence's last token,
each with its logits; the greedy choices are kept as long as they agree with the guesses
(plus the model's own next token), every one through the same stop, length and context
checks as a token decoded alone, and the rejected positions leave the slot's cache. The
answer is the one plain decoding gives; sampled requests never draft.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agentworld.models.base import Backend, BackendError, Completion, GenerationConfig, Message
from agentworld.models.contract import AnswerBlock
from agentworld.models.window import fit_prompt, prompt_budget
from agentworld.openmp import choose_wait_policy

DEFAULT_DRAFT = 8
"""Measured (benchmarks/embedded_speed.py --draft-only, terminal sessions one step at a time,
prefix cache on, 2 cores at load ~7): decode 16.5 vs 8.9 tokens/s, 40% of drafted tokens
accepted, p90 step 10.4 vs 15.0 s, p50 8.4 vs 8.5 s (the prompt dominates), answers identical."""


class GGUFError(ValueError):
    """A GGUF file llama.cpp cannot load; the message names the file."""


@dataclass
class _Request:
    """One sample to generate, and where its answer goes."""

    tokens: list[int]
    config: GenerationConfig
    seed: int | None
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    out: list[int] = field(default_factory=list)
    text: bytes = b""
    slot: int = -1
    cached: int = 0
    """Positions of this sequence in its slot's KV cache."""
    rng: np.random.Generator | None = None
    lookup: _Lookup | None = None
    """Where drafts come from (greedy requests with drafting on)."""
    prefix: str = ""
    """Text the answer was forced to open with (in the prompt, put back in front of the text)."""
    close: str | None = None
    """A closing tag that ends the answer and stays in its text."""


class _Lookup:
    """Prompt-lookup drafts: the tokens that followed the latest earlier occurrence of the
    sequence's last ``n`` tokens, for ``n`` from :attr:`NGRAM` down to 1."""

    NGRAM = 3

    def __init__(self, tokens: list[int]):
        self.tokens: list[int] = []
        # n-gram -> where its latest occurrence's continuation starts, per n (index n - 1)
        self._seen: list[dict[tuple[int, ...], int]] = [{} for _ in range(self.NGRAM)]
        for t in tokens:
            self.append(t)

    def append(self, token: int) -> None:
        t = self.tokens
        t.append(token)
        i = len(t) - 1  # t[i] continues the n-grams that end just before it
        for n in range(1, min(self.NGRAM, i) + 1):
            self._seen[n - 1][tuple(t[i - n : i])] = i

    def propose(self, k: int) -> list[int]:
        t = self.tokens
        for n in range(min(self.NGRAM, len(t)), 0, -1):
            start = self._seen[n - 1].get(tuple(t[-n:]))
            if start is not None:
                return t[start : start + k]
        return []


class LlamaCppBackend(Backend):
    """Generate with llama.cpp from a GGUF file, batching concurrent requests."""

    name = "llamacpp"

    def __init__(
        self,
        path: str | Path,
        *,
        max_batch: int = 16,
        context: int | None = None,
        threads: int | None = None,
        tokenizer: str | Path | None = None,
        model_name: str | None = None,
        revision: str | None = None,
        max_context: int | None = None,
        prefix_cache: bool = True,
        draft: int = DEFAULT_DRAFT,
    ):
        """``context``: the KV cache of each of the ``max_batch`` slots, in tokens (default:
        the window, ``max_context``, or the trained context when the window is off); a
        prompt must fit it, and generation stops there. The caches take memory up front:
        SmolLM2-135M needs 23 KB a token, 3 GB for 16 slots of 8,192.
        ``max_context``: the tokens one sequence reads (default: the model's trained
        context); a longer prompt loses its oldest history exchanges
        (:mod:`agentworld.models.window`); 0 sends every turn.
        ``tokenizer``: a Hugging Face ``tokenizer.json`` that encodes prompts instead of
        llama.cpp's tokenizer, whose pre-tokenizer splits some runs of spaces differently
        (measured: 8 of 42 benchmark prompts differed by a token); decoding is llama.cpp's.
        ``prefix_cache=False`` reads every prompt from its first token.
        ``draft``: tokens a greedy request guesses from its own prompt per step (0: off;
        the default is measured in ``benchmarks/embedded_speed.py --draft-only``)."""
        # ggml's OpenMP threads wait at ~hundreds of barriers a token: sleeping waits unless
        # the user chose otherwise (agentworld.openmp). Read when libgomp loads.
        choose_wait_policy()
        import llama_cpp

        self.path = Path(path)
        self._hf_tokenizer = None
        if tokenizer is not None:
            from tokenizers import Tokenizer

            if not Path(tokenizer).is_file():
                raise FileNotFoundError(f"tokenizer file not found: {tokenizer}")
            self._hf_tokenizer = Tokenizer.from_file(str(tokenizer))
        if not self.path.is_file():
            raise GGUFError(f"GGUF file not found: {self.path}")
        if max_batch < 1 or (context is not None and context < 64) or draft < 0:
            raise ValueError("max_batch must be >= 1, context >= 64 and draft >= 0")
        logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)  # llama.cpp's load chatter
        self._lib = llama_cpp
        llama_cpp.llama_backend_init()
        model = llama_cpp.llama_model_load_from_file(str(self.path).encode(), llama_cpp.llama_model_default_params())
        if not model:
            raise GGUFError(f"{self.path}: llama.cpp could not load this file (not a GGUF model, or corrupt)")
        self._model = model
        self._vocab = llama_cpp.llama_model_get_vocab(model)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self._vocab)
        self.max_batch = max_batch
        self._trained_context = llama_cpp.llama_model_n_ctx_train(model)
        self.max_context = self._trained_context if max_context is None else max_context
        self.context = context or self.max_context or self._trained_context
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = self.context * max_batch
        params.n_batch = params.n_ubatch = 512
        params.n_seq_max = max_batch
        params.kv_unified = False  # a cache per slot: attention reads only its own sequence
        params.n_threads = params.n_threads_batch = threads or os.cpu_count() or 1
        ctx = llama_cpp.llama_init_from_model(model, params)
        if not ctx:
            llama_cpp.llama_model_free(model)
            raise GGUFError(f"{self.path}: llama.cpp could not create {max_batch} caches of {self.context} tokens")
        self._ctx = ctx
        self._memory = llama_cpp.llama_get_memory(ctx)
        self._batch = llama_cpp.llama_batch_init(params.n_batch, 0, 1)
        self._n_batch = params.n_batch
        self.prefix_cache = prefix_cache
        self.read_tokens = self.reused_tokens = 0
        """Prompt tokens computed, and taken from a slot's cache instead (benchmarks read them)."""
        self.draft = draft
        self.drafted_tokens = self.accepted_tokens = 0
        """Tokens guessed by drafting, and the guesses the model agreed with (benchmarks and tests)."""
        self.step_seconds = 0.0
        self.step_tokens = 0
        """Time in decode steps and the tokens they wrote (a prompt's first token is the prompt's):
        decode tokens/s for benchmarks."""
        self._slot_tokens: list[list[int]] = [[] for _ in range(max_batch)]
        """The prompt tokens whose keys and values each slot holds, read in whole chunks
        from position 0 (worker thread only)."""
        self.metadata = {k: self._meta(k) for k in ("general.name", "tokenizer.chat_template")}
        self._template = _compile_template(self.metadata["tokenizer.chat_template"])
        self._stop_ids = {int(v) for k in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.padding_token_id")
                          if (v := self._meta(k)) is not None}
        self._specials = {"bos_token": self._meta_token("tokenizer.ggml.bos_token_id"),
                          "eos_token": self._meta_token("tokenizer.ggml.eos_token_id")}
        self._model_name = model_name or self.path.stem
        st = self.path.stat()
        self._revision = revision or f"{st.st_size}-{st.st_mtime_ns}"
        self._queue: queue.Queue[_Request | None] = queue.Queue()
        self.failure: BackendError | None = None
        self.peak_rows = 0
        """The most sequences decoded in one step so far (tests read it)."""
        self._worker = threading.Thread(target=self._run, name="llamacpp-worker", daemon=True)
        self._worker.start()

    @property
    def model_id(self) -> str:
        # a non-default window changes the answers to long sessions: cached ones must not mix
        window = "" if self.max_context == self._trained_context else f"/ctx{self.max_context}"
        return f"{self._model_name}@{self._revision}{window}"

    # -- prompt ------------------------------------------------------------------------
    def prompt_text(self, messages: list[Message]) -> str:
        if self._template is None:
            raise BackendError(f"{self.path}: the GGUF file has no chat template (tokenizer.chat_template)")
        return self._template.render(messages=messages, add_generation_prompt=True, **self._specials)

    def tokenize(self, text: str) -> list[int]:
        if self._hf_tokenizer is not None:
            return list(self._hf_tokenizer.encode(text, add_special_tokens=False).ids)
        data = text.encode()
        size = len(data) + 16
        buf = (self._lib.llama_token * size)()
        n = self._lib.llama_tokenize(self._vocab, data, len(data), buf, size, False, True)
        if n < 0:  # the buffer was too small: -n is the size needed
            buf = (self._lib.llama_token * -n)()
            n = self._lib.llama_tokenize(self._vocab, data, len(data), buf, -n, False, True)
        return list(buf[:n])

    def _piece(self, token: int) -> bytes:
        buf = ctypes.create_string_buffer(64)
        n = self._lib.llama_token_to_piece(self._vocab, token, buf, 64, 0, False)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = self._lib.llama_token_to_piece(self._vocab, token, buf, -n, 0, False)
        return buf.raw[:n]

    def _meta(self, key: str) -> str | None:
        size = 1 << 16
        while True:
            buf = ctypes.create_string_buffer(size)
            n = self._lib.llama_model_meta_val_str(self._model, key.encode(), buf, size)
            if n < 0:
                return None
            if n < size:
                return buf.value.decode("utf-8", "replace")
            size = n + 1

    def _meta_token(self, key: str) -> str:
        value = self._meta(key)
        if value is None:
            return ""
        buf = ctypes.create_string_buffer(256)
        n = self._lib.llama_token_to_piece(self._vocab, int(value), buf, 256, 0, True)
        return buf.raw[: max(n, 0)].decode("utf-8", "replace")

    # -- requests ----------------------------------------------------------------------
    async def complete(
        self, messages: list[Message], config: GenerationConfig, *, domain: str | None = None
    ) -> list[Completion]:
        return await self._submit(messages, config, None)

    async def complete_block(
        self, messages: list[Message], config: GenerationConfig, block: AnswerBlock, *, domain: str | None = None
    ) -> list[Completion]:
        """:meth:`complete`, the answer forced into ``block`` (:mod:`agentworld.models.contract`)."""
        return await self._submit(messages, config, block)

    async def _submit(self, messages: list[Message], config: GenerationConfig,
                      block: AnswerBlock | None) -> list[Completion]:
        cfg = config.resolved()

        def render(m: list[Message]) -> tuple[list[int], str]:
            text = self.prompt_text(m)
            prefix = block.prefix(text) if block else ""
            return self.tokenize(text + prefix), prefix

        tokens, prefix = fit_prompt(messages, render, lambda p: len(p[0]),
                                    prompt_budget(self.max_context, cfg.max_tokens))
        if len(tokens) + 1 > self.context:
            raise BackendError(f"prompt of {len(tokens)} tokens does not fit a slot's cache of {self.context} tokens")
        if self.failure is not None or self._ctx is None:
            raise self.failure or BackendError("the llamacpp backend is closed")
        loop = asyncio.get_running_loop()
        n = cfg.n or 1
        sampled = bool(cfg.temperature)
        futures = []
        for i in range(n):
            seed = None if cfg.seed is None or not sampled else cfg.seed + i
            req = _Request(tokens, cfg, seed, loop, loop.create_future(), prefix=prefix,
                           close=block.close if block else None)
            self._queue.put(req)
            futures.append(req.future)
        return list(await asyncio.gather(*futures))

    def forget_prefixes(self) -> None:
        """Reuse nothing cached so far (benchmarks call it between runs). Safe at any time:
        a slot that claims nothing is read from its first token."""
        for i in range(self.max_batch):
            self._slot_tokens[i] = []

    def generate_once(self, messages: list[Message], config: GenerationConfig | None = None) -> list[Completion]:
        """Synchronous generation (for scripts and benchmarks)."""
        return asyncio.run(self.complete(messages, config or GenerationConfig()))

    async def aclose(self) -> None:
        if self._worker.is_alive():
            self._queue.put(None)
            await asyncio.to_thread(self._worker.join)
        self._free()

    def _free(self) -> None:
        if self._ctx is not None:
            self._lib.llama_batch_free(self._batch)
            self._lib.llama_free(self._ctx)
            self._lib.llama_model_free(self._model)
            self._ctx = self._model = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id}, max_batch={self.max_batch}, context={self.context})"

    # -- the worker thread: the only code that touches the llama.cpp context -----------
    def _run(self) -> None:
        waiting: list[_Request] = []
        reading: list[_Request] = []
        running: list[_Request] = []
        try:
            self._loop(waiting, reading, running)
        except Exception as exc:  # a bug or a llama.cpp failure: fail every request, never hang one
            self.failure = BackendError(f"llama.cpp worker stopped: {type(exc).__name__}: {exc}")
            for req in waiting + reading + running:
                self._answer(req, error=self.failure)

    def _loop(self, waiting: list[_Request], reading: list[_Request], running: list[_Request]) -> None:
        free_slots = list(range(self.max_batch))  # least recently used first
        closing = False
        while not (closing and not waiting and not reading and not running):
            block = not waiting and not reading and not running
            try:
                while True:
                    item = self._queue.get(block=block)
                    block = False
                    if item is None:
                        closing = True
                    else:
                        waiting.append(item)
            except queue.Empty:
                pass
            while waiting and free_slots:  # arrival order
                req = waiting.pop(0)
                self._take_slot(req, free_slots)
                reading.append(req)
            if reading:  # one prompt chunk, then a decode step: running sequences keep going
                req = reading[0]
                done = self._read(req)
                if done is not None:
                    reading.pop(0)
                    if done:
                        self._release(req, free_slots)
                    else:
                        running.append(req)
            if running:
                start, before = time.perf_counter(), sum(len(r.out) for r in running)
                finished = self._step(running)
                self.step_seconds += time.perf_counter() - start
                self.step_tokens += sum(len(r.out) for r in running) - before
                for req in finished:
                    running.remove(req)
                    self._release(req, free_slots)

    def _take_slot(self, req: _Request, free_slots: list[int]) -> None:
        """The free slot holding the most reusable chunks of the prompt, then the longest
        shared prefix (the same request lands in the same slot, so its rows keep their
        place in the batch and a seeded sample repeats), then the least recently used
        one, so another session's cache lives longest; drop the rest of its cache."""
        shared = [_common_prefix(self._slot_tokens[s], req.tokens) for s in free_slots]
        keeps = [self._reusable(shared[i], req.tokens) for i in range(len(free_slots))]
        best = max(range(len(free_slots)), key=lambda i: (keeps[i], shared[i], -i))
        req.slot, keep = free_slots.pop(best), keeps[best]
        if not self._lib.llama_memory_seq_rm(self._memory, req.slot, keep, -1):
            self._lib.llama_memory_seq_rm(self._memory, req.slot, -1, -1)
            keep = 0
        req.cached = keep
        self.reused_tokens += keep
        self._slot_tokens[req.slot] = req.tokens[:keep]

    def _reusable(self, shared: int, prompt: list[int]) -> int:
        """Prompt tokens a slot sharing ``shared`` of them saves: whole chunks, short of
        the last prompt token (it gives the first logits)."""
        if not self.prefix_cache:
            return 0
        keep = min(shared, len(prompt) - 1)
        return keep - keep % self._n_batch

    def _release(self, req: _Request, free_slots: list[int]) -> None:
        # generated tokens were decoded a row at a time, next to other sequences: not reused
        self._slot_tokens[req.slot] = req.tokens[: req.cached]
        free_slots.append(req.slot)

    def _decode(self, rows: list[tuple[int, int, int, bool]]) -> int:
        """One ``llama_decode`` of (token, position, sequence, wants logits) rows."""
        b = self._batch
        for i, (tok, pos, seq, logits) in enumerate(rows):
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = tok, pos, 1, logits
            b.seq_id[i][0] = seq
        b.n_tokens = len(rows)
        return self._lib.llama_decode(self._ctx, b)

    def _logits(self, i: int) -> np.ndarray:
        return np.ctypeslib.as_array(self._lib.llama_get_logits_ith(self._ctx, i), shape=(self.n_vocab,))

    def _read(self, req: _Request) -> bool | None:
        """Decode the next chunk of the prompt; None while some is left, else whether the
        request is already done (answered: an error, or a stop at once)."""
        toks, start = req.tokens, req.cached
        chunk = toks[start : start + self._n_batch]
        last = start + len(chunk) == len(toks)
        rc = self._decode([(t, start + j, req.slot, last and j == len(chunk) - 1) for j, t in enumerate(chunk)])
        if rc != 0:
            self._forget(req)
            self._answer(req, error=BackendError(f"llama_decode failed ({rc}) on a {len(toks)}-token prompt"))
            return True
        req.cached += len(chunk)
        self.read_tokens += len(chunk)
        if not last:
            return None
        if req.seed is not None:
            req.rng = np.random.default_rng(req.seed)
        elif req.config.temperature:
            req.rng = np.random.default_rng()
        elif self.draft:
            req.lookup = _Lookup(req.tokens)
        return self._advance(req, self._logits(-1))

    def _forget(self, req: _Request) -> None:
        """After a failed decode the slot's cache is unknown: empty it."""
        self._lib.llama_memory_seq_rm(self._memory, req.slot, -1, -1)
        req.cached = 0

    def _step(self, running: list[_Request]) -> list[_Request]:
        """Decode the last token of every running sequence at once, each followed by its
        draft; the finished ones."""
        rows: list[tuple[int, int, int, bool]] = []
        drafts: list[list[int]] = []
        room = self._n_batch - len(running)  # rows the drafts may add to this batch
        for r in running:
            draft = self._propose(r, room)
            room -= len(draft)
            drafts.append(draft)
            rows.append((r.out[-1], r.cached, r.slot, True))
            rows += [(t, r.cached + 1 + j, r.slot, True) for j, t in enumerate(draft)]
        # llama.cpp computes a batch of one row (and one logits row) on another kernel path
        # than any larger batch, and its logits differ in the last bits (measured: up to 0.08),
        # enough to flip a greedy choice now and then: a lone row gets a second one after it
        # in its own sequence (causally masked, so it changes nothing of the first), and a
        # greedy answer no longer depends on what else ran, nor on drafting. The row guesses
        # that the last token repeats, for free.
        pad = len(rows) == 1
        if pad:
            r = running[0]
            rows.append((r.out[-1], r.cached + 1, r.slot, True))
            if not drafts[0] and self._room(r, 1) > 0:
                drafts[0] = [r.out[-1]]
        self.peak_rows = max(self.peak_rows, len(running))
        rc = self._decode(rows)
        if rc != 0:
            for r in running:
                self._forget(r)
                self._answer(r, error=BackendError(f"llama_decode failed ({rc}) with {len(rows)} rows"))
            return list(running)
        done, row = [], 0
        for r, draft in zip(running, drafts, strict=True):
            if self._verify(r, row, draft, 2 if pad else 1 + len(draft)):
                done.append(r)
            row += 1 + len(draft)
        return done

    def _room(self, req: _Request, room: int) -> int:
        """How many tokens a greedy request may guess: no more than it may still write
        after this step's own (max_tokens, the slot) or the batch has room for."""
        if req.lookup is None or not self.draft:
            return 0
        return min(self.draft, room, (req.config.max_tokens or 0) - len(req.out) - 1, self.context - req.cached - 2)

    def _propose(self, req: _Request, room: int) -> list[int]:
        k = self._room(req, room)
        return req.lookup.propose(k) if k > 0 and req.lookup is not None else []

    def _verify(self, req: _Request, row: int, draft: list[int], written: int) -> bool:
        """Take the step's tokens of ``req`` (its logits from ``row`` on; ``written``
        positions of its slot were decoded): the model's choice after its last token, then
        after each guess it agreed with; True when done."""
        base, finished = req.cached, False
        for j in range(len(draft) + 1):
            req.cached = base + j + 1  # the positions read so far: the checks see what plain decoding sees
            tok = self._pick(req, self._logits(row + j))
            agreed = j < len(draft) and tok == draft[j]
            self.accepted_tokens += agreed
            finished = self._accept(req, tok)
            if finished or not agreed:
                break
        self.drafted_tokens += len(draft)
        if req.cached < base + written:  # the guesses past the first miss: out of the cache
            self._lib.llama_memory_seq_rm(self._memory, req.slot, req.cached, -1)
        return finished

    def _pick(self, req: _Request, logits: np.ndarray) -> int:
        return _sample(logits, req.config, req.rng) if req.rng is not None else int(np.argmax(logits))

    def _advance(self, req: _Request, logits: np.ndarray) -> bool:
        """Pick the next token; True when the request is done (and answered)."""
        return self._accept(req, self._pick(req, logits))

    def _accept(self, req: _Request, tok: int) -> bool:
        """Append ``tok`` unless it ends the answer; True when the request is done (and answered)."""
        cfg = req.config
        if tok in self._stop_ids:
            self._answer(req, finish="stop")
            return True
        req.out.append(tok)
        req.text += self._piece(tok)
        if req.lookup is not None:
            req.lookup.append(tok)
        if cfg.stop and any(s.encode() in req.text for s in cfg.stop):
            self._answer(req, finish="stop")
            return True
        if req.close is not None and req.close.encode() in req.text:
            self._answer(req, finish="stop")
            return True
        if len(req.out) >= (cfg.max_tokens or 0) or req.cached + 1 >= self.context:  # the slot is full
            self._answer(req, finish="length")
            return True
        return False

    def _answer(self, req: _Request, *, finish: str = "stop", error: BaseException | None = None) -> None:
        if error is None:
            text = req.text.decode("utf-8", "replace")
            for s in req.config.stop or ():
                if s in text:
                    text = text[: text.index(s)]
            if req.close is not None and req.close in text:
                text = text[: text.index(req.close) + len(req.close)]
            text = req.prefix + text
            result: Any = Completion(text=text, prompt_tokens=len(req.tokens), completion_tokens=len(req.out),
                                     finish_reason=finish)
            setter = req.future.set_result
        else:
            result, setter = error, req.future.set_exception

        def deliver() -> None:
            if not req.future.done():
                setter(result)

        req.loop.call_soon_threadsafe(deliver)


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = np.asarray(a[:n]) != np.asarray(b[:n])
    return int(differ.argmax()) if differ.any() else n


def _sample(logits: np.ndarray, cfg: GenerationConfig, rng: np.random.Generator) -> int:
    """Temperature, then top-k, then top-p (nucleus), as transformers orders them."""
    scores = logits.astype(np.float64) / float(cfg.temperature or 1.0)
    if cfg.top_k and cfg.top_k < scores.size:
        kth = np.partition(scores, -cfg.top_k)[-cfg.top_k]
        scores = np.where(scores < kth, -np.inf, scores)
    order = np.argsort(-scores)
    probs = np.exp(scores[order] - scores[order[0]])
    probs /= probs.sum()
    if cfg.top_p is not None and cfg.top_p < 1.0:
        keep = np.cumsum(probs) - probs < cfg.top_p  # always keeps the most likely token
        probs = np.where(keep, probs, 0.0)
        probs /= probs.sum()
    return int(order[rng.choice(probs.size, p=probs)])


def _compile_template(source: str | None) -> Any:
    """The chat template in the sandboxed jinja2 environment transformers uses
    (``trim_blocks``, ``lstrip_blocks``, ``raise_exception``), so prompts render alike."""
    if not source:
        return None
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise BackendError(f"chat template: {message}")

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.globals["raise_exception"] = raise_exception
    return env.from_string(source)
