"""Library errors about a setting, re-worded as the command's option (``cli_settings``)."""

from __future__ import annotations

import pytest

from ltrfeat.core.errors import LtrfeatError, ParameterError, cli_settings


def _raise(fix: str, param: str | None):
    raise ParameterError("bad", fix=fix, param=param)


@pytest.mark.parametrize(
    "fix, param, expected",
    [
        ("give more queries or val_fraction=0 (no early stopping)", "val_fraction", "--val-fraction 0 (no"),
        ("use soft_labels='linear' for graded labels", "soft_labels", "use --soft-labels linear for"),
        ("use freeze_layers=0, or not", "freeze_layers", "use --freeze-layers 0, or"),
    ],
)
def test_the_fix_names_the_option(fix, param, expected):
    with pytest.raises(LtrfeatError) as caught, cli_settings(lambda k, v: f"--{k.replace('_', '-')} {v}", {param}):
        _raise(fix, param)
    assert expected in str(caught.value) and f"{param}=" not in str(caught.value)


def test_other_settings_and_other_words_are_left_alone():
    spell = lambda k, v: f"--encoder-option {k}={v}"  # noqa: E731
    with pytest.raises(LtrfeatError) as caught, cli_settings(spell, {"epochs"}):
        _raise("use conflicts='first'", "conflicts")
    assert str(caught.value) == "bad; use conflicts='first'"
    with pytest.raises(LtrfeatError) as caught, cli_settings(spell, {"epochs"}):
        _raise("e.g. max_epochs=3 or epochs=2", "epochs")
    assert str(caught.value) == "bad; e.g. max_epochs=3 or --encoder-option epochs=2"
