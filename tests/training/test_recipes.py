"""The shipped recipes (``haystack_dcsr/training/recipes/``, ``trainer/configs/`` in a clone) are the one place a
recipe is written: scripts read it through ``settings`` and ``dcsr-train settings``; a wrong key names what is
there; the trainer finds them by name from any directory."""

import pytest

from haystack_dcsr.training.cli import main
from haystack_dcsr.training.recipes import recipe_names, recipe_path, set_arguments, settings


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


def test_recipes_are_package_data_found_by_name_from_any_directory(tmp_path, monkeypatch):
    """A wheel user has no trainer/configs/: names (and clone paths) resolve to the package's own files."""
    from haystack_dcsr.training.config import TrainConfig

    monkeypatch.chdir(tmp_path)
    assert {"build_model.yaml", "squad_dcsr.yaml", "studies.yaml"} <= set(recipe_names())
    shipped = recipe_path("trainer/configs/squad_dcsr.yaml")
    assert shipped.parent.name == "recipes" and shipped.parent.parent.name == "training"
    assert recipe_path("squad_dcsr.yaml") == shipped
    config = TrainConfig.from_yaml("squad_dcsr.yaml", ["epochs=3"], settings={"lr": 2e-5, "pooling": "mean"})
    assert (config.lr, config.pooling, config.epochs) == (2e-5, "mean", 3)  # values as objects, then --set strings
    with pytest.raises(FileNotFoundError, match=r"nope\.yaml: no such recipe file \(shipped recipes: build_model"):
        recipe_path("nope.yaml")
