"""``dcsr-train build-model``: the recommended model from SQuAD-format data in one resumable command.

Stages, each writing its output under ``<out>/work/`` and a ``<stage>.done`` marker once it is whole,
so a command run again (after a kill, or to change a later stage) skips what is done:

1. ``data``: SQuAD JSON(.gz) -> training records and a passage corpus (or the trainer's JSONL as given); a
   budget with ``questions`` keeps a seeded sample of that many (the corpus stays whole);
2. ``bm25``: BM25 hard negatives for every question (the core's sparse BM25);
3. ``first``: a first DCSR model on them;
4. ``dense``: that model's own hard negatives (the paper's DCSR-hard mining: exact search, HasAns);
5. ``hard``: a fresh DCSR model trained on those: the recommended model, copied to ``<out>``;
6. ``card``: the model card, with the recipe and the dev metrics of training.

The recipe is the shipped ``build_model.yaml`` (budgets ``cpu`` and ``gpu``) over the training config
it names; nothing here restates a recipe value. ``--dry-run`` lists the stages with an estimate
of their time: training steps at the budget's ``seconds_per_step`` until steps have run on this machine,
then at their measured median (a machine's speed is what the ETA is for).

The stages are a table (:data:`STAGES`: name, run, estimate) over one :class:`Build` context; the recipe's
settings reach the trainer as values, never as ``--set`` strings.
"""

import json
import logging
import random
import shutil
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

import yaml

from haystack_dcsr.training.recipes import recipe_path

logger = logging.getLogger(__name__)

DEFAULT_RECIPE = "build_model.yaml"


class BuildError(ValueError):
    """Bad input to build-model; the message names it and what to do."""


def load_recipe(path: Union[str, Path], budget: str) -> Dict:
    """The recipe (a file, or the shipped ``build_model.yaml``) with its ``train_config`` resolved beside it."""
    try:
        path = recipe_path(path)
    except FileNotFoundError as error:
        raise BuildError(str(error)) from None
    recipe = yaml.safe_load(path.read_text())
    if not isinstance(recipe, dict) or budget not in recipe.get("budgets", {}):
        raise BuildError(f"{path}: no budget {budget!r} (budgets: {', '.join(recipe.get('budgets', {}))})")
    config = path.parent / recipe["train_config"]
    if not config.is_file():
        raise BuildError(f"{path}: its train_config {config} does not exist")
    recipe["train_config"] = config
    return recipe


@dataclass
class Build:
    """What every stage reads: the recipe at one budget, the inputs, and where each stage writes."""

    recipe: Dict
    budget: str
    train: Path
    out: Path
    squad: bool
    questions: int
    dev: Optional[Path] = None
    corpus: Optional[Path] = None
    overrides: Mapping[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> Dict:
        return self.recipe["budgets"][self.budget]

    @property
    def work(self) -> Path:
        return self.out / "work"

    @property
    def records(self) -> Path:
        return self.work / "train.jsonl"

    @property
    def passages(self) -> Path:
        return self.work / "corpus.jsonl" if self.squad else Path(self.corpus)

    @property
    def bm25_records(self) -> Path:
        return self.work / "train_bm25.jsonl"

    @property
    def dense_records(self) -> Path:
        return self.work / "train_hard.jsonl"

    @property
    def dev_records(self) -> Path:
        return self.work / "dev.jsonl"

    def training_steps(self, stage: str) -> int:
        settings = self.spec[stage]
        if settings.get("max_steps"):
            return int(settings["max_steps"])
        return int(settings.get("epochs", 1)) * max(self.questions // int(settings.get("batch_size", 32)), 1)

    def seconds_per_step(self) -> float:
        """The median step time logged under ``work`` (either training stage's: they share batch and lengths),
        else the budget's ``seconds_per_step``."""
        logged = self.logged_step_times()
        return round(statistics.median(logged) if logged else float(self.spec["seconds_per_step"]), 2)

    def logged_step_times(self) -> List[float]:
        return [t for stage in ("hard", "first") for t in _step_times(self.work / stage)]


def _prepare_data(build: Build) -> None:
    from haystack_dcsr.training.data import load_records, squad_to_records, write_corpus, write_records

    if build.squad:
        records, passages = squad_to_records(build.train, id_prefix="train-")
        write_corpus(passages, build.passages)
    else:
        records = load_records(build.train).records
    if build.questions < len(records):  # the budget's sample (seeded): every later stage reads only these
        write_records(random.Random(0).sample(records, build.questions), build.records)
    elif build.squad:
        write_records(records, build.records)
    else:  # the user's records as given, every field kept
        shutil.copyfile(build.train, build.records)
    if build.dev is not None:
        jsonl = ".jsonl" in build.dev.suffixes
        dev_records = load_records(build.dev).records if jsonl else squad_to_records(build.dev, id_prefix="dev-")[0]
        # validation reads the first dev_limit records: shuffled (seeded), they span many passages rather
        # than SQuAD's first hundred paragraphs, so the slice it ranks over is not a handful of passages
        random.Random(0).shuffle(dev_records)
        write_records(dev_records, build.dev_records)


def _mine_bm25(build: Build) -> None:
    from haystack_dcsr.training.data import load_records, read_corpus
    from haystack_dcsr.training.mining import bm25_search, mine_hard_negatives

    keep = int(build.recipe["bm25_negatives"])
    search = bm25_search(read_corpus(build.passages))
    mine_hard_negatives(load_records(build.records).records, search, build.bm25_records, top_k=max(30, keep), keep=keep)


def _mine_dense(build: Build) -> None:
    from haystack_dcsr.training.data import load_records, read_corpus
    from haystack_dcsr.training.mining import dense_search, mine_hard_negatives

    keep = int(build.recipe["dense_negatives"])
    search = dense_search(_best(build.work / "first"), read_corpus(build.passages))
    records = load_records(build.bm25_records).records
    mine_hard_negatives(records, search, build.dense_records, top_k=max(30, keep), keep=keep)


def _train(build: Build, stage: str) -> None:
    from haystack_dcsr.training.config import TrainConfig
    from haystack_dcsr.training.engine import Trainer

    settings = {
        **build.spec[stage],
        "train_file": str(build.bm25_records if stage == "first" else build.dense_records),
        "output_dir": str(build.work / stage),
        "dev_file": str(build.dev_records) if build.dev_records.is_file() else None,
        **build.overrides,
    }
    Trainer(TrainConfig.from_yaml(build.recipe["train_config"], settings=settings)).train(resume=True)


def _train_first(build: Build) -> None:
    _train(build, "first")


def _train_hard(build: Build) -> None:
    """The DCSR-hard model, then its best checkpoint copied to ``out`` (the model directory)."""
    _train(build, "hard")
    if build.out.joinpath("dcsr_model.json").exists():
        for item in ("query_encoder", "passage_encoder"):
            shutil.rmtree(build.out / item, ignore_errors=True)
    for item in _best(build.work / "hard").iterdir():
        target = build.out / item.name
        if item.is_dir():
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(item, target)
        else:
            shutil.copy2(item, target)


def _write_card(build: Build) -> None:
    card = build.out / "README.md"
    if not card.is_file():
        raise BuildError(f"{build.out}: the DCSR-hard stage left no model card")
    card.write_text(
        card.read_text()
        + f"\n## Built by `dcsr-train build-model --budget {build.budget}`\n\n"
        + "BM25 hard negatives, a first DCSR model "
        + f"({json.dumps(build.spec['first'])}), its own hard negatives, then this model "
        + f"({json.dumps(build.spec['hard'])}).\n"
    )


@dataclass(frozen=True)
class Stage:
    """One stage of the build: what it runs and its estimated seconds (a training stage's from its steps)."""

    name: str
    run: Callable[[Build], None]
    estimate: Callable[[Build], float]
    training: bool = False


def _training_estimate(stage: str) -> Callable[[Build], float]:
    return lambda build: build.training_steps(stage) * build.seconds_per_step()


STAGES = (
    Stage("data", _prepare_data, lambda build: 30 + build.questions * 0.001),
    Stage("bm25", _mine_bm25, lambda build: 30 + build.questions * 0.005),
    Stage("first", _train_first, _training_estimate("first"), training=True),
    Stage("dense", _mine_dense, lambda build: 120 + build.questions * 0.011),
    Stage("hard", _train_hard, _training_estimate("hard"), training=True),
    Stage("card", _write_card, lambda build: 5),
)


def plan(build: Build) -> List[Dict]:
    """Each stage with an estimate of its seconds; a training stage also says its steps, the step time used,
    whether that was logged here, and how many of its steps a checkpoint under ``work`` already holds."""
    from haystack_dcsr.training.checkpoints import newest_step

    rows = []
    for stage in STAGES:
        row = {"stage": stage.name, "seconds": stage.estimate(build)}
        if stage.training:
            steps = build.training_steps(stage.name)
            row.update(
                steps=steps,
                step_s=build.seconds_per_step(),
                logged=bool(build.logged_step_times()),
                done_steps=min(newest_step(build.work / stage.name), steps),
            )
        rows.append(row)
    return rows


def _step_times(run: Path) -> List[float]:
    """The ``step_s`` of each step a training run logged (its ``log.jsonl``), newest last."""
    log = run / "log.jsonl"
    if not log.is_file():
        return []
    rows = (json.loads(line) for line in log.read_text().splitlines() if line.strip())
    return [float(row["step_s"]) for row in rows if "step_s" in row]


def seconds_left(stages: List[Dict], work: Path) -> Dict[str, float]:
    """What each stage has left: nothing once its ``.done`` marker is written; a training stage that
    stopped, its steps after the newest checkpoint (the run resumes there); any other, its estimate."""
    left = {}
    for stage in stages:
        if (work / f"{stage['stage']}.done").is_file():
            left[stage["stage"]] = 0.0
        elif "steps" in stage:
            left[stage["stage"]] = stage["seconds"] * (1 - stage["done_steps"] / stage["steps"])
        else:
            left[stage["stage"]] = stage["seconds"]
    return left


def build_model(
    train: Path,
    out: Path,
    corpus: Optional[Path] = None,
    dev: Optional[Path] = None,
    budget: str = "cpu",
    recipe_path: Union[str, Path] = DEFAULT_RECIPE,
    overrides: Optional[Mapping[str, Any]] = None,
    dry_run: bool = False,
) -> Path:
    """Build the recommended model into ``out`` (a model directory); see the module docstring. ``overrides``
    are settings of both training stages, as values (``{"base_model": "runs/bases/mpnet"}``)."""
    from tqdm.auto import tqdm

    recipe = load_recipe(recipe_path, budget)
    train, out = Path(train), Path(out)
    if not train.is_file():
        raise BuildError(f"{train}: no such file (a SQuAD v1.1 JSON(.gz) file, or training records JSONL)")
    squad = ".jsonl" not in train.suffixes
    if not squad and corpus is None:
        raise BuildError(f"{train} holds training records: give the passages they come from with --corpus")
    available = _count_questions(train, squad)
    questions = min(available, int(recipe["budgets"][budget].get("questions") or available))
    build = Build(recipe, budget, train, out, squad, questions, dev, corpus, dict(overrides or {}))
    stages = plan(build)
    left = seconds_left(stages, build.work)
    if dry_run:
        _print_plan(stages, left, questions, available, budget)
        return out
    build.work.mkdir(parents=True, exist_ok=True)
    remaining = dict(left)
    bar = tqdm(total=len(STAGES), desc="build-model", unit=" stages")
    for stage in STAGES:
        marker = build.work / f"{stage.name}.done"
        if not marker.is_file():
            bar.set_postfix_str(f"{stage.name}; ETA {_duration(sum(remaining.values()))}")
            started = time.perf_counter()
            stage.run(build)
            marker.write_text(json.dumps({"seconds": round(time.perf_counter() - started, 1)}))
        remaining.pop(stage.name)
        bar.update(1)
    bar.close()
    return out


def _print_plan(stages: List[Dict], left: Dict[str, float], questions: int, available: int, budget: str) -> None:
    for stage in stages:
        name, steps = stage["stage"], ""
        if "steps" in stage:
            source = "logged here" if stage["logged"] else "the recipe's seconds_per_step"
            steps = f", {stage['steps']} steps at {stage['step_s']:g} s ({source})"
        if left[name] == 0:
            state = " (done)"
        elif left[name] < stage["seconds"]:
            state = f" (resumes at step {stage['done_steps']}: ~{_duration(left[name])} left)"
        else:
            state = ""
        print(f"{name:6s} ~{_duration(stage['seconds'])}{steps}{state}")
    total = sum(s["seconds"] for s in stages)
    print(
        f"total  ~{_duration(total)} for {questions} of {available} questions, budget {budget!r}; "
        f"~{_duration(sum(left.values()))} left"
    )


def _best(run: Path) -> Path:
    for name in ("best", "last"):
        if (run / name / "dcsr_model.json").is_file():
            return run / name
    raise BuildError(f"{run}: the training stage wrote no model (best/ or last/)")


def _count_questions(train: Path, squad: bool) -> int:
    from haystack_dcsr.training.data import read_json, read_lines

    if squad:
        data = read_json(train)
        return sum(len(p.get("qas", [])) for article in data.get("data", []) for p in article.get("paragraphs", []))
    return sum(1 for _, line in read_lines(train) if line.strip())


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return (
        f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"
    )
