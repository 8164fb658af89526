"""ONNX export speed: onnxruntime versus torch texts/s for the DSSM and CLSM towers on 2 threads.

Both encode the same texts with the same weights (paper sizes: DSSM 300-300-128, CLSM K=300 L=128,
random weights -- speed does not depend on training); the baseline is ``Encoder.encode`` (torch,
EmbeddingBag) in this run; onnxruntime includes ``prepare`` (hashing with numpy from the sidecar).
The script also checks the two give the same vectors (max abs difference, <= 1e-5).

Texts: Home Depot product titles when ../shared/datasets/home_depot is present, else generated
titles. Run: python benchmarks/bench_onnx.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import SHARED, timed, write_results  # noqa: E402
from ltrfeat.encoders import Encoder, TwoTowerModel, model_config  # noqa: E402
from ltrfeat.export.onnx import OnnxEncoder, export_onnx  # noqa: E402
from ltrfeat.encoders.hashing import TrigramHasher  # noqa: E402

THREADS = 2
N_TEXTS = 4000


def _texts() -> tuple[list[str], str]:
    path = SHARED / "datasets" / "home_depot" / "raw" / "train.csv"
    if path.exists():
        import pandas as pd

        titles = pd.read_csv(path, encoding="latin-1", usecols=["product_title"])["product_title"]
        return list(dict.fromkeys(titles.astype(str)))[:N_TEXTS], "home_depot product titles"
    rng = np.random.default_rng(0)
    words = [f"w{i}x{i * 7 % 13}" for i in range(3000)]
    return [" ".join(rng.choice(words, size=rng.integers(3, 12))) for _ in range(N_TEXTS)], "generated titles"


def main() -> None:
    torch.set_num_threads(THREADS)
    texts, source = _texts()
    figures = {"texts": len(texts), "source": source, "threads": THREADS}
    print(f"{len(texts)} distinct {source}, {THREADS} threads; texts/s of the document tower (best of 3)")
    for arch in ("dssm", "clsm"):
        torch.manual_seed(0)
        hasher = TrigramHasher().fit(texts)
        encoder = Encoder(hasher, TwoTowerModel(model_config(arch, hasher.n_features_)).eval())
        with tempfile.TemporaryDirectory() as tmp:
            export_onnx(encoder, Path(tmp) / "enc")
            onnx_encoder = OnnxEncoder.load(Path(tmp) / "enc", threads=THREADS)

        def run_torch():
            encoder.hasher = TrigramHasher.from_json(hasher.to_json())  # cold word cache: hashing included
            return encoder.encode(texts, side="doc", batch_size=256)

        def run_onnx():
            onnx_encoder._hashing.cache.clear()
            return onnx_encoder.encode(texts, side="doc", batch_size=256)

        t_torch, v_torch = timed(run_torch)
        t_onnx, v_onnx = timed(run_onnx)
        diff = float(np.abs(v_torch - v_onnx).max())
        row = {
            "torch_texts_per_s": len(texts) / t_torch,
            "onnxruntime_texts_per_s": len(texts) / t_onnx,
            "ratio_onnx_over_torch": t_torch / t_onnx,
            "max_abs_diff": diff,
        }
        figures[arch] = row
        print(
            f"  {arch}: torch {row['torch_texts_per_s']:9.0f}/s  onnxruntime {row['onnxruntime_texts_per_s']:9.0f}/s"
            f"  ratio onnxruntime/torch = {row['ratio_onnx_over_torch']:.2f}x  max |diff| = {diff:.1e}"
        )
    print(f"results: {write_results('bench_onnx', figures)}")


if __name__ == "__main__":
    main()
