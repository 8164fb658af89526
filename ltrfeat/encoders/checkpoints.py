"""Resumable training checkpoints: an ``.ltrenc`` bundle of kind ``checkpoint`` rewritten after every epoch.

It holds the weights, the best checkpoint's weights (and a start worth keeping's), the optimizer's state and both
random states, so a resumed run equals the uninterrupted one bit for bit; its header names the training's params and
data, and a checkpoint of another training is refused.
"""

from __future__ import annotations

import torch

from ltrfeat.core.errors import ModelFileError
from ltrfeat.encoders.bundle import read_bundle, write_bundle

__all__ = ["read_checkpoint", "read_checkpoint_bundle", "write_checkpoint"]


def write_checkpoint(path, *, model, best_state, optimizer, rng, header, start_state=None):
    """Write a resumable checkpoint: weights, the best epoch's weights, optimizer and both random states (and
    ``start_state``, the starting weights of a training that may keep them)."""
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    tensors.update({f"best.{k}": v for k, v in best_state.items()})
    same = start_state is best_state  # the start is still the best: safetensors stores no shared tensors
    tensors.update({f"start.{k}": v.clone() if same else v for k, v in (start_state or {}).items()})
    for i, state in optimizer.state_dict()["state"].items():
        tensors.update({f"optim.{i}.{name}": torch.as_tensor(v) for name, v in state.items()})
    tensors["torch_rng"] = torch.get_rng_state()
    write_bundle(path, kind="checkpoint", header={**header, "numpy_rng": rng.bit_generator.state}, tensors=tensors)


def read_checkpoint_bundle(path, *, params: dict, data_sha: str) -> tuple[dict, dict]:
    """Header and tensors of a checkpoint written for these training ``params`` and data (an error otherwise)."""
    header, tensors = read_bundle(path, kind="checkpoint")
    if header.get("params") != params or header.get("data_sha256") != data_sha:
        raise ModelFileError(
            "checkpoint was written for other training data or options",
            path=path,
            fix="resume with the same PAIRS file and options, or train from scratch",
        )
    return header, tensors


def read_checkpoint(path, *, params, data_sha, model, optimizer):
    """Load a checkpoint's weights, optimizer and torch random state into ``model`` / ``optimizer``; returns
    its header, the best epoch's weights and the starting weights (None when it kept none)."""
    header, tensors = read_checkpoint_bundle(path, params=params, data_sha=data_sha)

    def group(prefix):
        return {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}

    try:
        model.load_state_dict(group("model."), strict=True)
        best_state = group("best.")
        state: dict = {}
        for name, value in group("optim.").items():
            i, key = name.split(".", 1)
            state.setdefault(int(i), {})[key] = value
        optimizer.load_state_dict({"state": state, "param_groups": optimizer.state_dict()["param_groups"]})
        torch.set_rng_state(tensors["torch_rng"])
        start_state = group("start.") or None
    except (KeyError, ValueError, RuntimeError) as exc:
        raise ModelFileError(
            f"checkpoint does not match the model: {' '.join(str(exc).split())[:300]}",
            path=path,
            fix="train from scratch",
        ) from None
    return header, best_state, start_state
