"""Write a Llama-family PyTorch state dict as GGUF, shaped like an existing GGUF file.

llama.cpp's own converter (``convert_hf_to_gguf.py``) is not part of any installed
package, so the file is written with the ``gguf`` library's writer instead. The source
GGUF supplies everything but the weights: its key/value metadata (hyperparameters,
tokenizer, chat template) is copied as is, and its tensor list says which tensors to
write, under which names and in which order. Only the weights come from the state dict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

# Keys the writer fills in itself, or that describe the old weights.
_SKIPPED_KEYS = ("GGUF.", "general.architecture", "general.file_type", "general.quantization_version")


def write_like(source: Path, state_dict: dict[str, Any], out: Path, outtype: str) -> None:
    """Write ``state_dict`` (Hugging Face Llama names, fp32) to ``out`` with the metadata
    and tensor list of ``source``; matrices as ``outtype`` (f16, q8_0 or f32), norms fp32."""
    import gguf

    reader = gguf.GGUFReader(source)
    arch = reader.fields["general.architecture"].contents()
    if arch != "llama":
        raise ValueError(f"{source}: only llama-architecture GGUF files can be rewritten, not {arch!r}")
    blocks = int(reader.fields["llama.block_count"].contents())
    n_head = int(reader.fields["llama.attention.head_count"].contents())
    n_kv = int(reader.fields["llama.attention.head_count_kv"].contents())
    by_gguf_name = _gguf_names(state_dict, blocks)

    writer = gguf.GGUFWriter(out, arch)
    for key, field in reader.fields.items():
        if key.startswith(_SKIPPED_KEYS):
            continue
        sub = field.types[1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, field.contents(), field.types[0], sub)
    writer.add_file_type(_FILE_TYPES[outtype])
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)

    for info in reader.tensors:
        if info.name not in by_gguf_name:
            raise ValueError(f"{source}: tensor {info.name} has no counterpart in the state dict")
        weight = by_gguf_name[info.name].detach().float().numpy()
        if ".attn_q." in info.name:
            weight = _to_gguf_rope_order(weight, n_head)
        elif ".attn_k." in info.name:
            weight = _to_gguf_rope_order(weight, n_kv)
        _add(writer, info.name, weight, outtype)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _gguf_names(state_dict: dict[str, Any], blocks: int) -> dict[str, Any]:
    """GGUF tensor name -> tensor, by the ``gguf`` library's name table."""
    import gguf

    table = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, blocks)
    out: dict[str, Any] = {}
    for name, tensor in state_dict.items():
        mapped = table.get_name(name, try_suffixes=(".weight", ".bias"))
        if mapped is not None:
            out[mapped] = tensor
    return out


def _to_gguf_rope_order(weight: np.ndarray, heads: int) -> np.ndarray:
    """Reorder q/k projection rows from Hugging Face's rotary layout (two halves per head)
    to GGUF's (interleaved pairs): the inverse of what transformers undoes on loading."""
    half = weight.shape[0] // heads // 2
    return weight.reshape(heads, 2, half, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def _add(writer: Any, name: str, weight: np.ndarray, outtype: str) -> None:
    import gguf

    if weight.ndim < 2 or outtype == "f32":  # norms stay fp32, as llama.cpp expects
        writer.add_tensor(name, weight.astype(np.float32))
    elif outtype == "f16":
        writer.add_tensor(name, weight.astype(np.float16))
    else:
        qtype = gguf.GGMLQuantizationType.Q8_0
        writer.add_tensor(name, gguf.quants.quantize(weight.astype(np.float32), qtype), raw_dtype=qtype)


_FILE_TYPES = {"f32": 0, "f16": 1, "q8_0": 7}  # llama_ftype values (LLAMA_FTYPE_ALL_F32, MOSTLY_F16, MOSTLY_Q8_0)
