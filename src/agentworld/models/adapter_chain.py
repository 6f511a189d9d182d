"""LoRA adapters trained in stages (CPT -> SFT -> GSPO), loadable from the last folder alone.

A stage that starts from an earlier stage's adapter trains on the base with that adapter
merged in, so its own adapter is only right on top of that merged model. PEFT's
``adapter_config.json`` can name one base only, so the chain is recorded beside it in
``agentworld_chain.json``: the raw base (``smol`` or a checkpoint folder) and the earlier
stages, whose adapter files are copied under ``chain/`` so the folder is self-contained.
Loading merges base + earlier stages in order, then the folder's own adapter.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ADAPTER_CONFIG = "adapter_config.json"
CHAIN_FILE = "agentworld_chain.json"
CHAIN_DIR = "chain"
_ADAPTER_FILES = (ADAPTER_CONFIG, "adapter_model.safetensors", "adapter_model.bin")


def is_adapter_folder(path: str | Path) -> bool:
    """A PEFT adapter folder (adapter_config.json, no full model config)."""
    p = Path(path)
    return (p / ADAPTER_CONFIG).exists() and not (p / "config.json").exists()


@dataclass(frozen=True)
class AdapterChain:
    """What a model is made of: ``base``, then every adapter of ``stages`` merged in order."""

    base: str
    """``smol`` (the embedded SmolLM2, converted on first use) or a checkpoint folder."""
    stages: tuple[Path, ...] = ()

    def base_path(self) -> Path:
        if self.base == "smol":
            from agentworld.models.smol import converted_checkpoint

            return converted_checkpoint()
        return Path(self.base)

    def then(self, adapter: str | Path) -> AdapterChain:
        return AdapterChain(self.base, (*self.stages, Path(adapter)))

    def describe(self) -> str:
        return " + ".join([self.base, *(str(s) for s in self.stages)])


def read_chain(adapter: str | Path) -> AdapterChain:
    """The chain that ends with the adapter in ``adapter`` (its own adapter is the last stage)."""
    folder = Path(adapter)
    record = folder / CHAIN_FILE
    if record.exists():
        data = json.loads(record.read_text(encoding="utf-8"))
        earlier = tuple(folder / s for s in data.get("stages", []))
        return AdapterChain(str(data["base"]), (*earlier, folder))
    # A plain PEFT folder: its config names the base it was trained on.
    config = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    base = config.get("base_model_name_or_path") or ""
    if not (Path(base) / "config.json").exists():
        raise FileNotFoundError(
            f"{folder / ADAPTER_CONFIG} names base model {base!r}, which is not a checkpoint folder here "
            f"(and there is no {CHAIN_FILE}): load the base with path=BASE and this folder as adapter=..."
        )
    return AdapterChain(base, (folder,))


def write_chain(folder: str | Path, base: str, earlier: tuple[Path, ...]) -> Path:
    """Record in adapter ``folder`` that it was trained on ``base`` with ``earlier`` merged,
    copying the earlier adapters under ``chain/`` (so moving the folder keeps them)."""
    out = Path(folder)
    target = out / CHAIN_DIR
    if target.exists():
        shutil.rmtree(target)
    names = []
    for i, stage in enumerate(earlier):
        name = f"{CHAIN_DIR}/{i:02d}"
        (out / name).mkdir(parents=True)
        for f in _ADAPTER_FILES:
            if (Path(stage) / f).exists():
                shutil.copy2(Path(stage) / f, out / name / f)
        names.append(name)
    path = out / CHAIN_FILE
    path.write_text(json.dumps({"base": base, "stages": names}, indent=1) + "\n", encoding="utf-8")
    return path


def merge_stages(model: Any, stages: tuple[Path, ...]) -> Any:
    """``model`` with each adapter of ``stages`` folded into its weights, in order."""
    from peft import PeftModel

    for stage in stages:
        model = PeftModel.from_pretrained(model, stage).merge_and_unload()
    return model


def load_chain(chain: AdapterChain, **options: Any) -> Any:
    """The causal LM of ``chain`` with every stage merged (``options`` go to ``from_pretrained``)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(chain.base_path(), **options)
    return merge_stages(model, chain.stages)
