"""A tiny randomly initialised Llama checkpoint with a BPE tokenizer trained on the fly.

Tests and CPU recipes need a real Hugging Face checkpoint folder (config, safetensors
weights, tokenizer with a chat template) that loads in well under a second and never
touches the network. Its outputs are noise, but every code path -- chat templating,
left-padded batches, generation, PEFT adapters, training -- runs for real.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def default_texts() -> list[str]:
    """A few KB of in-domain text: every domain's system prompt plus tagged observations."""
    from agentworld.domains import DOMAINS
    from agentworld.prompts import build_system_prompt, format_observation
    from agentworld.records.trajectory import SimContext

    texts = [build_system_prompt(d, SimContext(task_description="List the files.")) for d in DOMAINS]
    texts += [
        format_observation("root@sandbox:/workspace# ls\nREADME.md  src  tests\nroot@sandbox:/workspace#"),
        format_observation('{"content": [{"type": "text", "text": "ok"}], "isError": false}', "The tool succeeds."),
        '[{"keystrokes": "echo hello\\n", "duration": 1.0}]',
    ]
    return texts


def train_tokenizer(texts: Iterable[str], vocab_size: int = 512):
    """A byte-level BPE tokenizer with ChatML special tokens, as a transformers tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_tiny_checkpoint(
    path: str | Path, *, texts: Iterable[str] | None = None, seed: int = 0, hidden_size: int = 32, layers: int = 2
) -> Path:
    """Write (or reuse) a tiny random Llama checkpoint folder at ``path`` and return it.

    Loadable with ``load_backend("hf", path=...)`` and ``AutoModelForCausalLM``. An
    existing complete folder is reused as is.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    path = Path(path)
    if (path / "config.json").exists() and (path / "tokenizer.json").exists() and (path / "model.safetensors").exists():
        return path
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(texts if texts is not None else default_texts())
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=16384,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
        # Wide init: greedy outputs then depend on the prompt, which tests can check.
        initializer_range=0.5,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


if __name__ == "__main__":  # python -m agentworld.models.tiny FOLDER: for recipes and smoke runs
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: python -m agentworld.models.tiny FOLDER")
    print(build_tiny_checkpoint(sys.argv[1]))
