"""The ``hf`` backend: a local Hugging Face checkpoint folder, optionally with a PEFT adapter,
or a (chained) adapter folder alone, loaded on its recorded base (models/adapter_chain.py).

Concurrent calls are batched (left padding, one ``generate`` per batch) by
:class:`~agentworld.models._batching.Batcher`. On CUDA the model runs in bf16; on CPU it
runs in one of three precisions: ``fp32``, ``bf16`` weights, or fp32 weights under bf16
``autocast``; ``auto`` picks what ``benchmarks/backends_throughput.py`` measured fastest
(see :func:`auto_precision`).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Hashable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentworld.models._batching import Batcher
from agentworld.models.adapter_chain import CHAIN_FILE, AdapterChain, is_adapter_folder, load_chain, read_chain
from agentworld.models.base import Backend, Completion, GenerationConfig, Message
from agentworld.models.contract import AnswerBlock
from agentworld.models.window import fit_prompt, prompt_budget


def folder_revision(*folders: Path | None) -> str:
    """A short revision id from configs and weight file names, sizes and mtimes (cheap:
    hashing hundreds of MB of weights on every load would cost seconds)."""
    digest = hashlib.sha256()
    for folder in folders:
        if folder is None:
            continue
        for p in sorted(Path(folder).iterdir()):
            if p.suffix == ".json":
                digest.update(p.read_bytes())
            elif p.is_file():
                st = p.stat()
                digest.update(f"{p.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return digest.hexdigest()[:12]


def tool_chat_template(tokenizer: Any, name: str) -> None:
    """``qwen2.5``: give a tokenizer whose chat template cannot render tool calls TRL's Qwen2.5
    template (the one ``agent train`` teaches); ``own``: leave it as it is."""
    if name not in ("qwen2.5", "own"):
        raise ValueError(f"chat_template must be qwen2.5 or own, not {name!r}")
    if name == "qwen2.5":
        from trl.chat_template_utils import qwen2_5_chat_template, supports_tool_calling

        if not supports_tool_calling(tokenizer):
            tokenizer.chat_template = qwen2_5_chat_template


class HFBackend(Backend):
    """Generate with ``transformers`` from a checkpoint folder (plus optional adapter)."""

    name = "hf"

    def __init__(
        self,
        path: str | Path,
        *,
        adapter: str | Path | None = None,
        device: str | None = None,
        precision: str = "auto",
        max_batch: int = 16,
        model_name: str | None = None,
        revision: str | None = None,
        chat_template: str | None = None,
        max_context: int | None = None,
    ):
        """``max_context``: the tokens the model reads (default: its trained context,
        ``max_position_embeddings``); a longer prompt loses its oldest history exchanges
        (:mod:`agentworld.models.window`); 0 sends every turn."""
        import torch
        from transformers import AutoTokenizer

        self.path = Path(path)
        # An adapter folder as path= (a LoRA training stage's output): its recorded base
        # and earlier stages are merged, then its own adapter.
        chain = read_chain(self.path) if is_adapter_folder(self.path) else AdapterChain(str(self.path))
        base = chain.base_path()
        if not (base / "config.json").exists():
            raise FileNotFoundError(f"not a Hugging Face checkpoint or adapter folder (no config.json): {self.path}")
        self.adapter = Path(adapter) if adapter else None
        if self.adapter is not None:
            if not (self.adapter / "adapter_config.json").exists():
                raise FileNotFoundError(f"not a PEFT adapter folder (no adapter_config.json): {self.adapter}")
            # A chained adapter brings its earlier stages; its own base is this backend's path.
            extra = read_chain(self.adapter) if (self.adapter / CHAIN_FILE).exists() else AdapterChain("", (self.adapter,))
            chain = AdapterChain(chain.base, (*chain.stages, *extra.stages))
        self.chain = chain
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.precision = auto_precision(self.device) if precision == "auto" else precision
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be auto or one of {', '.join(PRECISIONS)}")
        options: dict[str, Any] = {"dtype": torch.bfloat16 if self.precision == "bf16" else torch.float32}
        tokenizer_dir = self.path if (self.path / "tokenizer_config.json").exists() else base
        self.tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if chat_template:
            tool_chat_template(self.tokenizer, chat_template)
        # Adapters are merged once, so generation costs the same as the base model.
        model = load_chain(chain, **options)
        self.model = model.to(self.device).eval()
        self._trained_context = getattr(model.config, "max_position_embeddings", None) or 0
        self.max_context = self._trained_context if max_context is None else max_context
        self._torch = torch
        self.autocast = self.precision == "autocast" and self.device == "cpu"
        self._model_name = model_name or self.path.name
        rev = revision or folder_revision(base)
        self._revision = "+".join([rev, *(folder_revision(s) for s in chain.stages)])
        self.batcher: Batcher[tuple[list[Message], int], list[Completion]] = Batcher(
            self._generate_batch, max_rows=max_batch
        )

    @property
    def model_id(self) -> str:
        # a non-default window changes the answers to long sessions: cached ones must not mix
        window = "" if self.max_context == self._trained_context else f"/ctx{self.max_context}"
        return f"{self._model_name}@{self._revision}{window}"

    # -- generation ------------------------------------------------------------------
    def prompt_text(self, messages: list[Message]) -> str:
        # A message may carry the tools' JSON schemas (the agents' ``tools`` protocol): the
        # chat template renders them, as it does for TRL's tool-calling rollouts.
        tools = next((m["tools"] for m in messages if m.get("tools")), None)
        plain = [{k: v for k, v in m.items() if k != "tools"} for m in messages]
        return self.tokenizer.apply_chat_template(plain, tools=tools, add_generation_prompt=True, tokenize=False)

    def fitted_prompt(self, messages: list[Message], max_tokens: int | None) -> str:
        """The prompt text of ``messages``, cut to the model's context with room for ``max_tokens``."""
        return self._fitted(messages, max_tokens, None)[0]

    def _fitted(self, messages: list[Message], max_tokens: int | None,
                block: AnswerBlock | None) -> tuple[str, str]:
        """The fitted prompt, ending with the text the answer is forced to open with; and that text."""
        def render(m: list[Message]) -> tuple[str, str]:
            text = self.prompt_text(m)
            prefix = block.prefix(text) if block else ""
            return text + prefix, prefix

        def length(prompt: tuple[str, str]) -> int:
            return len(self.tokenizer(prompt[0], add_special_tokens=False)["input_ids"])

        return fit_prompt(messages, render, length, prompt_budget(self.max_context, max_tokens))

    async def complete(
        self, messages: list[Message], config: GenerationConfig, *, domain: str | None = None
    ) -> list[Completion]:
        # The model reads its domain from the prompt: ``domain`` changes nothing here.
        return await self._submit(messages, config, None)

    async def complete_block(
        self, messages: list[Message], config: GenerationConfig, block: AnswerBlock, *, domain: str | None = None
    ) -> list[Completion]:
        """:meth:`complete`, the answer forced into ``block`` (:mod:`agentworld.models.contract`)."""
        return await self._submit(messages, config, block)

    async def _submit(self, messages: list[Message], config: GenerationConfig,
                      block: AnswerBlock | None) -> list[Completion]:
        cfg = config.resolved()
        seeded = _seeded_rows(cfg)
        if seeded is None:
            return await self.batcher.submit(_batch_key(cfg, block), (messages, cfg.n or 1), size=cfg.n or 1)
        rows = [self.batcher.submit(_batch_key(c, block), (messages, 1), solo=True) for c in seeded]
        return [c for row in await asyncio.gather(*rows) for c in row]

    def _generate_batch(self, key: Hashable, items: Sequence[tuple[list[Message], int]]) -> list[list[Completion]]:
        torch = self._torch
        settings, block = key  # type: ignore[misc]
        cfg = GenerationConfig(**dict(settings))
        fitted = [self._fitted(m, cfg.max_tokens, block) for m, _ in items]
        prefixes = [prefix for (_, prefix), (_, n) in zip(fitted, items, strict=True) for _ in range(n)]
        texts = [text for (text, _), (_, n) in zip(fitted, items, strict=True) for _ in range(n)]
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        sample = (cfg.temperature or 0.0) > 0
        kwargs: dict[str, Any] = {
            "max_new_tokens": cfg.max_tokens,
            "do_sample": sample,
            "pad_token_id": self.tokenizer.pad_token_id,
        }
        if sample:
            kwargs.update(temperature=cfg.temperature, top_p=cfg.top_p or 1.0, top_k=cfg.top_k or 0)
        else:  # override sampling defaults shipped in generation_config.json
            kwargs.update(temperature=None, top_p=None, top_k=None)
        stops = [*(cfg.stop or ()), *([block.close] if block else [])]
        if stops:
            kwargs.update(stop_strings=stops, tokenizer=self.tokenizer)
        with torch.random.fork_rng(devices=[] if self.device == "cpu" else None):
            if cfg.seed is not None:
                torch.manual_seed(cfg.seed)
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.autocast):
                out = self.model.generate(**enc, **kwargs)
        gen = out[:, enc["input_ids"].shape[1] :].tolist()
        prompt_lens = enc["attention_mask"].sum(dim=1).tolist()
        rows = [self._completion(g, int(p), cfg, block, prefix)
                for g, p, prefix in zip(gen, prompt_lens, prefixes, strict=True)]
        results, pos = [], 0
        for _, n in items:
            results.append(rows[pos : pos + n])
            pos += n
        return results

    def _completion(self, tokens: list[int], prompt_tokens: int, cfg: GenerationConfig,
                    block: AnswerBlock | None = None, prefix: str = "") -> Completion:
        eos = self.model.generation_config.eos_token_id
        # Rows that finished early are filled with padding: it ends a completion too.
        eos_ids = set(eos if isinstance(eos, list) else [eos])
        eos_ids |= {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
        cut = next((i for i, t in enumerate(tokens) if t in eos_ids), None)
        kept = tokens if cut is None else tokens[:cut]
        text = self.tokenizer.decode(kept, skip_special_tokens=True)
        finish = "stop" if cut is not None else "length"
        for s in cfg.stop or ():
            if s in text:
                text, finish = text[: text.index(s)], "stop"
        if block is not None:  # the closing tag stays: the parser sees a closed block
            text, closed = block.cut(text)
            finish = "stop" if closed else finish
        return Completion(text=prefix + text, prompt_tokens=prompt_tokens, completion_tokens=len(kept), finish_reason=finish)

    def generate_once(self, messages: list[Message], config: GenerationConfig | None = None,
                      block: AnswerBlock | None = None) -> list[Completion]:
        """Synchronous, unbatched generation (for scripts and benchmarks), the answer
        forced into ``block`` if given."""
        cfg = (config or GenerationConfig()).resolved()
        seeded = _seeded_rows(cfg)
        if seeded is None:
            return self._generate_batch(_batch_key(cfg, block), [(messages, cfg.n or 1)])[0]
        return [self._generate_batch(_batch_key(c, block), [(messages, 1)])[0][0] for c in seeded]

    async def aclose(self) -> None:
        self.model = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id}, device={self.device}, precision={self.precision})"



def _seeded_rows(cfg: GenerationConfig) -> list[GenerationConfig] | None:
    """Per-sample settings for seeded sampling, else None. Seeded sampling is reproducible
    only alone (in a batch the random draws depend on the other rows), and sample i uses
    seed + i so that it is the same sample whatever ``n`` is."""
    if cfg.seed is None or not cfg.temperature:
        return None
    return [replace(cfg, seed=cfg.seed + i, n=1) for i in range(cfg.n or 1)]


def _batch_key(config: GenerationConfig, block: AnswerBlock | None) -> Hashable:
    """Requests batch together when every resolved setting but ``n`` is equal, and the
    answer block they are forced into."""
    settings = config.resolved().to_dict()
    settings.pop("n", None)
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in settings.items())), block


PRECISIONS = ("fp32", "bf16", "autocast")


def auto_precision(device: str) -> str:
    """bf16 on CUDA. On CPU, bf16 weights where the CPU has native bf16 instructions, else
    fp32. Measured with SmolLM2-135M on an AVX-512-bf16 CPU (benchmarks/backends_throughput.py,
    two quiet runs, ratios to plain fp32 generate): single-stream bf16 1.14x / 0.94x vs fp32
    0.99x / 1.00x, 4 concurrent bf16 2.70x / 2.28x vs fp32 1.74x / 1.34x; bf16 autocast was
    slower than bf16 weights in every setting."""
    if device.startswith("cuda"):
        return "bf16"
    return "bf16" if cpu_has_native_bf16() else "fp32"


def cpu_has_native_bf16() -> bool:
    """Whether the CPU flags list native bf16 instructions (Linux; False elsewhere)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:  # not Linux: stay with the safe choice
        return False
    return any(f in flags for f in ("avx512_bf16", "amx_bf16"))
