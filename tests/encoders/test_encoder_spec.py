"""``ltrfeat.encoders.spec``: the ``ablate --encoder`` and ``extract --encoder`` grammars in one module, which
split ``=PATH`` alike and say what they said before they were moved here (messages pinned)."""

from __future__ import annotations

import pytest

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.encoders.spec import EncoderSpec, parse_encoder_spec, spec_fix


@pytest.mark.parametrize("path", ["dir", "dir=with=signs", "a b"])
def test_both_grammars_take_everything_after_the_first_equals_sign_as_the_path(path):
    assert EncoderSpec.parse(f"sbert={path}").path == path
    assert parse_encoder_spec(f"sbert={path}") == ("sbert", path)


@pytest.mark.parametrize(
    "text, message",
    [
        ("clsm=", "unknown encoder 'clsm='"),
        ("clsm:softmax=a\nb", "unknown encoder 'clsm:softmax=a\\nb'"),
        ("clsm =x", "unknown encoder 'clsm =x'"),
        ("clsm+init", "encoder 'clsm+init': +init needs the pre-trained bundle"),
        ("sbert:softmax", "encoder 'sbert:softmax': sbert takes no loss"),
        ("clsm=x", "encoder 'clsm=x': clsm takes no path"),
    ],
)
def test_the_training_grammar_refuses_as_before(text, message):
    with pytest.raises(LtrfeatError) as caught:
        EncoderSpec.parse(text)
    assert str(caught.value).startswith(message)
    assert "unknown" not in message or caught.value.fix == spec_fix()


@pytest.mark.parametrize(
    "text, message",
    [
        ("clsm=", "encoder 'clsm=' has an empty path"),
        ("clsm", "encoder 'clsm' needs a model file"),
        ("nope=x", "unknown encoder 'nope=x'"),
        ("clsm--x=y", "unknown encoder 'clsm--x=y'"),
    ],
)
def test_the_scoring_grammar_refuses_as_before(text, message):
    with pytest.raises(LtrfeatError, match="^" + message.replace("(", r"\(")):
        parse_encoder_spec(text)


def test_a_scoring_name_may_carry_a_label_and_spaces_around_its_parts():
    assert parse_encoder_spec("clsm-gen = m.ltrenc ") == ("clsm-gen", "m.ltrenc")
    assert parse_encoder_spec("sbert") == ("sbert", None)
    assert EncoderSpec.parse("dssm@dot") == EncoderSpec("dssm", "softmax", None, None, "dot")
