"""trainer/configs/ is the one place a recipe is written: scripts read it through ``settings`` and
``dcsr-train settings``; a wrong key names what is there."""

import pytest

from haystack_dcsr.training.cli import main
from haystack_dcsr.training.recipes import set_arguments, settings


def test_dotted_keys_and_list_positions(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("a:\n  lr: 3.0e-5\n  stages:\n    - {seed: 1, steps: 640}\n    - {seed: 2, steps: 960}\n")
    assert settings(recipe, "a.lr") == 3e-5
    assert settings(recipe, "a.stages.1.steps") == 960
    assert settings(recipe, "")["a"]["stages"][0] == {"seed": 1, "steps": 640}
    with pytest.raises(KeyError, match=r"no 'a.stages.2.seed' \(at '2'; keys there: positions 0-1\)"):
        settings(recipe, "a.stages.2.seed")
    with pytest.raises(KeyError, match=r"at 'x'; keys there: lr, stages"):
        settings(recipe, "a.x")
    with pytest.raises(KeyError, match="none: it is a value"):
        settings(recipe, "a.lr.x")


def test_the_shipped_recipes_are_found_by_name_and_printed_as_set_arguments(capsys):
    first = settings("build_model.yaml", "budgets.gpu.first")  # found in trainer/configs/ from any directory
    assert first["max_steps"] == 200 and first["lr"] == 3e-5
    assert set_arguments({"max_steps": None, "lr": 1e-5, "pooling": "mean"}) == [
        "--set", "max_steps=null", "--set", "lr=1e-05", "--set", "pooling=mean"
    ]  # fmt: skip
    main(["settings", "trainer/configs/studies.yaml", "reranker.continuations.0.steps"])
    main(["settings", "trainer/configs/studies.yaml", "contrast_stage", "--sets"])
    assert capsys.readouterr().out.split() == [
        "640", "--set", "max_steps=null", "--set", "lr=1e-05", "--set", "meq_records_only=true"
    ]  # fmt: skip
    with pytest.raises(SystemExit) as exit_info:
        main(["settings", "trainer/configs/studies.yaml", "reranker.first_steps", "--sets"])
    assert exit_info.value.code == 2
    assert "is a value, not a mapping of settings (drop --sets)" in capsys.readouterr().err
