"""``dcsr-train build-model`` end to end on a tiny SQuAD-format corpus: every stage runs, the output is a
model directory the retriever loads, a second run skips what is done, and --dry-run plans without running."""

import json

import pytest
from conftest import make_tiny_bert
from corpus import tiny_squad

from haystack_dcsr.training.cli import main


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("build_base"), max_length=128)


def test_build_model_runs_every_stage_and_writes_a_model_directory(tmp_path, base, capsys):
    """The shipped recipe with its cpu budget's question sample set to half the tiny corpus's 16 questions."""
    import yaml

    from haystack_dcsr.training.build_model import DEFAULT_RECIPE
    from haystack_dcsr.training.recipes import recipe_path

    data = tiny_squad(tmp_path / "train.json")
    out = tmp_path / "model"
    shipped = recipe_path(DEFAULT_RECIPE)
    recipe = yaml.safe_load(shipped.read_text())
    recipe["budgets"]["cpu"]["questions"] = 8
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    (tmp_path / recipe["train_config"]).write_text((shipped.parent / recipe["train_config"]).read_text())
    settings = [
        "--recipe",
        str(tmp_path / "recipe.yaml"),
        "--set",
        f"base_model={base}",
        "--set",
        "max_steps=2",
        "--set",
        "max_passage_length=64",
        "--set",
        "precision=fp32",
        "--set",
        "batch_size=8",
        "--set",
        "retrieval_dev_passages=0",
    ]
    main(["build-model", "--data", str(data), "--out", str(out), *settings])
    assert {p.name for p in (out / "work").glob("*.done")} == {
        f"{s}.done" for s in ("data", "bm25", "first", "dense", "hard", "card")
    }
    assert (out / "dcsr_model.json").is_file() and (out / "query_encoder").is_dir()
    assert "Built by `dcsr-train build-model --budget cpu`" in (out / "README.md").read_text()
    records = [json.loads(line) for line in (out / "work" / "train.jsonl").read_text().splitlines()]
    hard = [json.loads(line) for line in (out / "work" / "train_hard.jsonl").read_text().splitlines()]
    assert len(records) == 8 and len({r["question"] for r in records}) == 8  # the budget's sample
    assert [r["question"] for r in hard] == [r["question"] for r in records]  # every stage reads only it
    assert all(r["hard_negative_ctxs"] for r in hard)  # the first model's own negatives
    corpus = (out / "work" / "corpus.jsonl").read_text().splitlines()
    assert len(corpus) == len({p["context"] for a in json.loads(data.read_text())["data"] for p in a["paragraphs"]})
    from haystack.document_stores import InMemoryDocumentStore

    from haystack_dcsr import DCSRRetriever

    retriever = DCSRRetriever(document_store=InMemoryDocumentStore(embedding_dim=32), model=str(out))
    assert retriever.embedding_dim == 32
    # a second run finds every stage done and changes nothing
    stamp = (out / "dcsr_model.json").stat().st_mtime_ns
    main(["build-model", "--data", str(data), "--out", str(out), *settings])
    assert (out / "dcsr_model.json").stat().st_mtime_ns == stamp
    capsys.readouterr()
    main(["build-model", "--data", str(data), "--out", str(out), "--dry-run", *settings[:2]])
    plan = capsys.readouterr().out
    assert "first  ~" in plan and "100 steps at" in plan and plan.count("(done)") == 6
    assert "for 8 of 16 questions" in plan
    assert plan.rstrip().endswith("~0m00s left")


def test_build_model_names_bad_input(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["build-model", "--data", str(tmp_path / "missing.json"), "--out", str(tmp_path / "m")])
    assert stop.value.code == 2 and "missing.json: no such file" in capsys.readouterr().err
    (tmp_path / "r.jsonl").write_text("{}\n")
    with pytest.raises(SystemExit):
        main(["build-model", "--data", str(tmp_path / "r.jsonl"), "--out", str(tmp_path / "m")])
    assert "give the passages they come from with --corpus" in capsys.readouterr().err


def test_dry_run_says_what_is_left_after_a_stop(tmp_path, capsys):
    """A build stopped in the DCSR-hard stage resumes from its newest checkpoint: the plan says so and
    counts only the steps after it (a checkpoint still being written, without state.pt, does not count),
    at the recipe's step time until steps were logged on this machine, then at their median."""
    from haystack_dcsr.training.build_model import DEFAULT_RECIPE, Build, _duration, load_recipe, plan

    data = tiny_squad(tmp_path / "train.json")
    work = tmp_path / "model" / "work"
    work.mkdir(parents=True)
    for stage in ("data", "bm25", "first", "dense"):
        (work / f"{stage}.done").write_text('{"seconds": 1}')
    (work / "hard" / "checkpoint-0000300").mkdir(parents=True)
    (work / "hard" / "checkpoint-0000300" / "state.pt").write_bytes(b"")
    (work / "hard" / "checkpoint-0000320").mkdir()  # interrupted mid-write
    recipe = load_recipe(DEFAULT_RECIPE, "cpu")
    command = ["build-model", "--data", str(data), "--out", str(tmp_path / "model"), "--dry-run"]

    def printed_and_expected():
        main(command)
        stages = {s["stage"]: s for s in plan(Build(recipe, "cpu", data, work.parent, True, 16))}
        hard_left = stages["hard"]["seconds"] * (1 - 300 / stages["hard"]["steps"])
        return capsys.readouterr().out, stages, hard_left

    printed, stages, hard_left = printed_and_expected()
    assert stages["hard"]["step_s"] == float(recipe["budgets"]["cpu"]["seconds_per_step"])
    assert "(the recipe's seconds_per_step)" in printed
    assert f"(resumes at step 300: ~{_duration(hard_left)} left)" in printed
    assert printed.count("(done)") == 4
    assert printed.rstrip().endswith(f"~{_duration(hard_left + stages['card']['seconds'])} left")
    logged = [{"step": i + 1, "step_s": t} for i, t in enumerate([10.0, 12.0, 30.0])] + [{"step": 3, "dev_mrr@10": 0.5}]
    (work / "first").mkdir()
    (work / "first" / "log.jsonl").write_text("".join(json.dumps(row) + "\n" for row in logged))
    printed, stages, hard_left = printed_and_expected()
    assert stages["hard"]["step_s"] == 12.0 and hard_left == 12.0 * (stages["hard"]["steps"] - 300)
    assert "steps at 12 s (logged here) (resumes at step 300" in printed
