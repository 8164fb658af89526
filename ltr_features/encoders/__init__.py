"""Neural text encoders (DSSM, CLSM) trained on clicks or judgments, saved as ``.ltrenc`` bundles."""
from ltr_features.encoders.encoder import Encoder
from ltr_features.encoders.model import TwoTowerModel, model_config
from ltr_features.encoders.training import train_encoder

__all__ = ["Encoder", "TwoTowerModel", "model_config", "train_encoder"]
