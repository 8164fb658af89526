"""Damage a LightGBM / XGBoost model many ways and load each through ``LambdaMART.load``.

Run as a script (``python model_fuzz.py MODEL N SEED``) in a child process: a native crash
kills the child, which the calling test sees as a negative return code. Prints one summary
line ``checked=N refused=R loaded=L``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np


def corruptions(raw: bytes, n: int, seed: int):
    """Truncations at evenly spaced offsets, byte flips, deleted and duplicated lines, digit edits."""
    rng = np.random.default_rng(seed)
    lines = raw.split(b"\n")
    digits = [i for i, b in enumerate(raw) if 48 <= b <= 57]
    per_kind = max(1, n // 5)
    for cut in np.linspace(0, len(raw) - 1, per_kind).astype(int):
        yield f"truncate@{cut}", raw[:cut]
    for _ in range(per_kind):
        i = int(rng.integers(len(raw)))
        yield f"flip@{i}", raw[:i] + bytes([raw[i] ^ (1 << int(rng.integers(8)))]) + raw[i + 1 :]
    for _ in range(per_kind):
        k = int(rng.integers(len(lines)))
        yield f"delete-line{k + 1}", b"\n".join(lines[:k] + lines[k + 1 :])
    for _ in range(per_kind):
        k = int(rng.integers(len(lines)))
        yield f"duplicate-line{k + 1}", b"\n".join(lines[: k + 1] + lines[k:])
    for _ in range(per_kind):
        i = digits[int(rng.integers(len(digits)))]
        yield f"digit@{i}", raw[:i] + str(int(rng.integers(10))).encode() + raw[i + 1 :]


def main(model: str, n: int, seed: int) -> None:
    from ltrfeat.core.errors import ModelFileError
    from ltrfeat.rankers.lambdamart import LambdaMART, meta_path

    model = Path(model)
    raw = model.read_bytes()
    meta = json.loads(meta_path(model).read_text())
    X = np.random.default_rng(0).normal(size=(50, len(meta["features"]["features"]))).astype(np.float32)
    refused = loaded = 0
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / model.name
        for name, data in corruptions(raw, n, seed):
            target.write_bytes(data)
            # the checksum is fixed up: the file is wrong but consistent
            meta_path(target).write_text(json.dumps(meta | {"model_sha256": hashlib.sha256(data).hexdigest()}))
            print(name, file=sys.stderr, flush=True)  # the last line names the culprit after a crash
            try:
                m = LambdaMART.load(target)
            except ModelFileError as exc:
                assert "\n" not in str(exc)
                refused += 1
                continue
            engine_names = meta["engine_feature_names"]
            from ltrfeat.rankers.lambdamart import _ENGINES

            _ENGINES[m.engine].predict(m.booster_, X, m.best_iteration_, engine_names)
            loaded += 1
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"checked={refused + loaded} refused={refused} loaded={loaded}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
