"""``embed --verify``'s second reference for a model folder, where ``transformers`` is installed:
the model's own code, run up to its first block.

The model is built from its config.json on the meta device (nothing allocated), then only the
modules outside its blocks get memory: their tensors are read from the folder's safetensors
files (or ``pytorch_model.bin``, without pickles), their buffers initialised by transformers
itself. A forward pre-hook on the first block takes what it receives, and stops the pass. The
blocks and the output head never leave the meta device.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
_FILES = ("model.safetensors", "pytorch_model.bin")
# where multimodal wrappers keep their language model's blocks (tests/support/familymodels.py's
# first_blocks names the same)
_LANGUAGE_BLOCKS = (
    "language_model.layers",
    "language_model.model.layers",
    "text_model.layers",
    "git.encoder.layer",
)


class _Reached(Exception):
    """Raised by the pre-hook: the first block was reached."""


def available() -> bool:
    """Whether transformers can be imported here."""
    import importlib.util

    return importlib.util.find_spec("transformers") is not None


def _weight_files(folder: Path) -> list[Path]:
    for name in _INDEXES:
        if (folder / name).is_file():
            weight_map = json.loads((folder / name).read_text()).get("weight_map", {})
            return [folder / f for f in dict.fromkeys(weight_map.values())]
    return [folder / name for name in _FILES if (folder / name).is_file()][:1]


def _reader(files: list[Path]) -> dict[str, Any]:
    """name -> a function returning that tensor, over every file of the folder."""
    import torch

    found: dict[str, Any] = {}
    for path in files:
        if path.suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(path), framework="pt") as opened:
                for key in opened.keys():  # noqa: SIM118 - safe_open has no __iter__
                    found[key] = lambda key=key, path=path: _one(path, key)
        else:
            loaded = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
            for key, value in loaded.items():
                found[key] = lambda value=value: value
    return found


def _one(path: Path, key: str) -> torch.Tensor:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as opened:
        return opened.get_tensor(key)


def _blocks(model: Any) -> Any:
    """The first ModuleList whose first element holds parameters: the blocks (a wrapper's
    language model's, named in _LANGUAGE_BLOCKS, before its vision or audio tower's)."""
    from torch import nn

    for name, module in model.named_modules():
        if name.endswith(_LANGUAGE_BLOCKS):
            return module
    for module in model.modules():
        if isinstance(module, nn.ModuleList) and len(module) and _holds_parameters(module[0]):
            while isinstance(module[0], nn.ModuleList):  # Funnel's blocks: a list per block
                module = module[0]
            return module
    return None


def _holds_parameters(module: Any) -> bool:
    return next(module.parameters(), None) is not None


def _init_weights(model: Any, module: Any) -> None:
    """transformers' own initialisation of ``module``'s tensors; through the base model where
    the head class's reads attributes only the base model has (xLSTM's ``embeddings``)."""
    try:
        model._init_weights(module)
    except AttributeError:
        try:
            model.base_model._init_weights(module)
        except AttributeError:  # a wrapper's config lacks a field its text model's has (Dots 3
            _owner(model, module)._init_weights(module)  # Note's initializer_range)


def _owner(model: Any, module: Any) -> Any:
    """The innermost transformers model holding ``module`` (a wrapper's language model)."""
    from transformers import PreTrainedModel

    owners = [m for m in model.modules() if isinstance(m, PreTrainedModel)]
    return next(m for m in reversed(owners) if any(x is module for x in m.modules()))


def first_block_input(
    folder: Path, ids: torch.Tensor, mask: torch.Tensor, dtype: torch.dtype, head: str | None
) -> tuple[torch.Tensor | None, str]:
    """(what the model's first block receives for ``ids`` on the CPU, or None; the class run,
    or why it could not be)."""
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    config = transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
    names = [a for a in (config.architectures or []) if hasattr(transformers, a)]
    with torch.device("meta"):
        if names:
            model = getattr(transformers, names[0])._from_config(config, dtype=dtype).eval()
        else:  # no architectures in config.json: the family's causal LM class
            model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype).eval()
            names = [type(model).__name__]
    blocks = _blocks(model)
    if blocks is None:
        return None, f"{names[0]} has no list of blocks"
    inside = {id(m) for m in blocks.modules()}
    tensors = _reader(_weight_files(folder))
    head_module = head.rsplit(".", 1)[0] if head else None
    missing: list[tuple[Any, str, str]] = []
    loaded: set[int] = set()
    for name, module in model.named_modules():
        if id(module) in inside or name == head_module:
            continue
        own = [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]
        if not own:
            continue
        module.to_empty(device="cpu", recurse=False)
        _init_weights(model, module)  # buffers (rotary frequencies, scales) as transformers sets
        for key, parameter in module.named_parameters(recurse=False):
            full = f"{name}.{key}" if name else key
            stored = _stored(full, tensors)
            if stored is not None:
                with torch.no_grad():
                    parameter.copy_(tensors[stored]())
                loaded.add(parameter.data_ptr())
            else:
                missing.append((module, key, full))
    if hasattr(model, "tie_weights"):
        model.tie_weights()  # a table stored once and used twice (T5's shared)
    unfilled = {  # module -> its tensors the folder does not hold (after tying)
        id(module): full
        for module, key, full in missing
        if getattr(module, key).data_ptr() not in loaded
    }
    ran: set[int] = set()
    watchers = [
        m.register_forward_pre_hook(lambda module, _: ran.add(id(module)))
        for m in model.modules()
        if id(m) in unfilled
    ]
    got: dict[str, torch.Tensor] = {}

    def hook(module: Any, args: tuple, kwargs: dict) -> None:
        hidden = args[0] if args else kwargs.get("hidden_states")
        got["hidden"] = hidden.detach().clone()
        raise _Reached

    # the block and its children: a stack that calls block.forward directly (SqueezeBERT's)
    # runs no hook of the block, and its first child then receives what the block received
    handles = [
        m.register_forward_pre_hook(hook, with_kwargs=True)
        for m in (blocks[0], *blocks[0].children())
    ]
    try:
        with torch.no_grad():
            model(input_ids=ids.cpu(), attention_mask=mask.cpu())
    except _Reached:
        pass
    finally:
        for handle in handles:
            handle.remove()
        for watcher in watchers:
            watcher.remove()
    used = [unfilled[i] for i in ran if i in unfilled]
    if used:  # a module that ran on memory holding no checkpoint values: no reference
        return None, (
            f"no tensor named {used[0]}, which transformers' {names[0]} reads, is in the "
            "checkpoint (transformers may rename a checkpoint's keys as it loads them; this "
            "reference reads them as they are named)"
        )
    if "hidden" not in got:
        return None, f"{names[0]} did not reach its first block"
    return got["hidden"], names[0]


def _stored(full: str, tensors: dict[str, Any]) -> str | None:
    """The checkpoint's key of the parameter ``full``: the same name, or, where transformers
    renamed the keys on save, the one name with a single path part fewer (T5Gemma 2 saves
    ``model.encoder.text_model.embed_tokens`` as ``model.encoder.embed_tokens``); None where
    neither, or more than one such name, is there."""
    if full in tensors:
        return full
    parts = full.split(".")
    shorter = {".".join(parts[:i] + parts[i + 1 :]) for i in range(len(parts) - 1)}
    found = [name for name in shorter if name in tensors]
    return found[0] if len(found) == 1 else None
