"""Training configs (ltrfeat.encoders.config), settings files and the CLI's --config."""

from __future__ import annotations

import json

import pytest
import torch
from click.testing import CliRunner

from builders import make_pairs
from ltrfeat.cli.main import cli
from ltrfeat.core.config_files import read_config
from ltrfeat.encoders.encoder import Encoder
from ltrfeat.encoders.config import DeepMatchConfig, EncoderConfig, SbertConfig
from ltrfeat.encoders.registry import encoder_kinds
from ltrfeat.encoders.training import train_encoder
from ltrfeat.core.errors import LtrfeatError, ParameterError


@pytest.mark.parametrize("cls", [EncoderConfig, SbertConfig, DeepMatchConfig])
def test_configs_round_trip_through_plain_values(cls):
    config = cls(epochs=3, seed=7)
    values = json.loads(json.dumps(config.to_dict()))
    assert cls.from_dict(values) == config
    assert config.replace(epochs=4).epochs == 4 and config.epochs == 3  # frozen: replace makes a copy
    with pytest.raises(AttributeError):
        config.epochs = 5


@pytest.mark.parametrize(
    "cls, bad, match",
    [
        (EncoderConfig, {"loss": "ranknet"}, "loss must be one of softmax, generalized, hinge"),
        (EncoderConfig, {"negatives": 0, "in_batch": False}, "no negatives"),
        (EncoderConfig, {"pretrain": "rbm"}, "needs model='dssm'"),
        (EncoderConfig, {"batch_size": 1}, "batch_size must be an integer >= 2, got 1"),
        (EncoderConfig, {"epochs": True}, "epochs must be an integer >= 0, got True"),
        (EncoderConfig, {"epochs": 2.5}, "epochs must be an integer >= 0, got 2.5"),
        (EncoderConfig, {"val_fraction": 1.0}, r"val_fraction must be a number in \[0, 1\)"),
        (EncoderConfig, {"gamma": 0}, "gamma must be a number > 0 or None, got 0"),
        (SbertConfig, {"freeze_layers": -2}, "freeze_layers must be an integer >= -1"),
        (SbertConfig, {"lr": 0}, "lr must be a number > 0, got 0"),
        (SbertConfig, {"precision": "fp16"}, "precision must be one of fp32, bf16"),
        (DeepMatchConfig, {"topics": (10, 50)}, "1 <= coarse <= fine"),
        (DeepMatchConfig, {"margin": 1.5}, r"margin must be a number in \(0, 1\), got 1.5"),
        (EncoderConfig, {"epoch": 3}, "no setting 'epoch'; use one of"),
    ],
)
def test_a_bad_setting_is_refused_when_the_config_is_made(cls, bad, match):
    with pytest.raises(ParameterError, match=match):
        cls.build(None, bad)


def test_every_trainer_setting_is_a_config_field():
    configs = {k.name: k.config for k in encoder_kinds().values() if k.trainable}
    assert configs == {
        "clsm": EncoderConfig,
        "dssm": EncoderConfig,
        "sbert-ft": SbertConfig,
        "deepmatch": DeepMatchConfig,
    }
    assert {"epochs", "negatives", "seed", "val_fraction"} <= set(EncoderConfig.names()) & set(SbertConfig.names())
    assert EncoderConfig().resolved_gamma == 10.0 and EncoderConfig(score="dot").resolved_gamma == 1.0


def test_a_config_and_the_same_keyword_options_train_the_same_encoder(tmp_path):
    pairs = make_pairs()
    config = EncoderConfig(model="dssm", epochs=2, batch_size=64, seed=3)
    a, _ = train_encoder(pairs, config, progress=False)
    b, _ = train_encoder(pairs, model="dssm", epochs=2, batch_size=64, seed=3, progress=False)
    c, _ = train_encoder(pairs, EncoderConfig(model="dssm", seed=3), epochs=2, batch_size=64, progress=False)
    for key, value in a.model.state_dict().items():
        assert torch.equal(value, b.model.state_dict()[key]) and torch.equal(value, c.model.state_dict()[key])
    assert a.training["params"] == b.training["params"] == c.training["params"]
    a.save(tmp_path / "a.ltrenc")
    params = Encoder.load(tmp_path / "a.ltrenc").training["params"]
    assert params["model"] == "dssm" and params["gamma"] == 10.0 and "score" not in params  # the bundles' layout
    with pytest.raises(ValueError, match="no setting 'epoch'"):
        train_encoder(pairs, epoch=2)
    with pytest.raises(TypeError, match="EncoderConfig"):
        train_encoder(pairs, SbertConfig())


@pytest.mark.parametrize(
    "name, text",
    [
        ("enc.toml", 'model = "dssm"\nepochs = 2\nsizes = {out = 32}\n'),
        ("enc.yaml", "model: dssm\nepochs: 2\nsizes: {out: 32}\n"),
        ("enc.json", '{"model": "dssm", "epochs": 2, "sizes": {"out": 32}}'),
    ],
)
def test_configs_load_from_toml_yaml_and_json(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    assert EncoderConfig.from_file(path) == EncoderConfig(model="dssm", epochs=2, sizes={"out": 32})


def test_settings_files_fail_with_file_line_and_fix(tmp_path):
    cases = {
        "a.toml": "epochs = \n",
        "b.yaml": "epochs: [1\n",
        "c.json": '{"epochs": }',
        "d.ini": "x=1",
        "e.yaml": "- 1\n- 2\n",
    }
    expected = {
        "a.toml": "a.toml:1: bad TOML",
        "b.yaml": "b.yaml:2: bad YAML",
        "c.json": "c.json:1: bad JSON",
        "d.ini": "unknown settings file type",
        "e.yaml": "holds a list, not a table",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(LtrfeatError, match=expected[name]):
            read_config(tmp_path / name)
    (tmp_path / "f.toml").write_bytes(b'x = "\xff"\n')
    with pytest.raises(LtrfeatError, match="not UTF-8"):
        read_config(tmp_path / "f.toml")
    (tmp_path / "g.toml").write_text("[encoder]\nepoch = 2\n")
    with pytest.raises(LtrfeatError, match="g.toml: clsm/dssm training has no setting 'epoch'"):
        EncoderConfig.from_file(tmp_path / "g.toml", table="encoder")
    with pytest.raises(LtrfeatError, match=r"no \[ranker\] table"):
        EncoderConfig.from_file(tmp_path / "g.toml", table="ranker")


def _train_cli(tmp_path, *args):
    pairs = tmp_path / "pairs.tsv"
    if not pairs.exists():
        make_pairs().to_csv(pairs, sep="\t", index=False)
    return CliRunner().invoke(cli, ["train-encoder", str(pairs), "--out", str(tmp_path / "m.ltrenc"), *args])


def test_cli_config_file_sets_options_and_the_command_line_wins(tmp_path):
    cfg = tmp_path / "settings.toml"
    cfg.write_text('[train-encoder]\nmodel = "dssm"\nepochs = 1\nbatch-size = 64\n[ablate]\nseeds = "0"\n')
    res = _train_cli(tmp_path, "--config", str(cfg))
    assert res.exit_code == 0, res.output
    params = Encoder.load(tmp_path / "m.ltrenc").training["params"]
    assert (params["model"], params["epochs"], params["batch_size"]) == ("dssm", 1, 64)
    res = _train_cli(tmp_path, "--config", str(cfg), "--epochs", "2", "--model", "clsm")
    assert res.exit_code == 0, res.output
    params = Encoder.load(tmp_path / "m.ltrenc").training["params"]
    assert (params["model"], params["epochs"], params["batch_size"]) == ("clsm", 2, 64)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "[train-encoder]\nepoch = 1\n",
            "[train-encoder] 'train-encoder' has no option 'epoch'; did you mean 'epochs'?",
        ),
        ("[ablate]\nseeds = '0'\n", "no [train-encoder] table for this command (the file has [ablate])"),
        ("epochs = 'many'\n", "'many' is not a valid integer"),
        ("epochs = \n", "bad TOML"),
    ],
)
def test_cli_config_file_errors_are_one_line(tmp_path, text, message):
    cfg = tmp_path / "settings.toml"
    cfg.write_text(text)
    res = _train_cli(tmp_path, "--config", str(cfg))
    assert res.exit_code == 2 and message in res.output, res.output
    assert res.output.count("\n") == 1 and "Traceback" not in res.output
    assert not (tmp_path / "m.ltrenc").exists()


def test_every_command_takes_a_config_file_including_nested_ones(tmp_path):
    import click

    def leaves(group, path=()):
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                yield from leaves(command, (*path, name))
            else:
                yield (*path, name), command

    commands = dict(leaves(cli))
    assert len(commands) > 15 and all(any(p.name == "config" for p in c.params) for c in commands.values())
    cfg = tmp_path / "settings.toml"
    cfg.write_text("[datasets.synth]\nqueries = 12\ndocs = 60\nclick-queries = 0\nseed = 4\n")
    res = CliRunner().invoke(cli, ["datasets", "synth", "--config", str(cfg), "--out", str(tmp_path / "w")])
    assert res.exit_code == 0, res.output
    options = json.loads((tmp_path / "w" / "world.json").read_text())["options"]
    assert (options["seed"], options["n_queries"], options["n_docs"]) == (4, 12, 60)
