"""Neural text encoders (DSSM, CLSM) trained on clicks or judgments, saved as ``.ltrenc`` bundles."""

from ltrfeat.features.encoders.encoder import Encoder
from ltrfeat.features.encoders.model import TwoTowerModel, model_config
from ltrfeat.features.encoders.training import train_encoder

__all__ = ["Encoder", "TwoTowerModel", "model_config", "train_encoder"]
