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

The recipe is ``trainer/configs/build_model.yaml`` (budgets ``cpu`` and ``gpu``) over the training
config it names; nothing here restates a recipe value. ``--dry-run`` lists the stages with an estimate
of their time: training steps at the budget's ``seconds_per_step`` until steps have run on this machine,
then at their measured median (a machine's speed is what the ETA is for).
"""

import json
import logging
import random
import shutil
import statistics
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import yaml

logger = logging.getLogger(__name__)

STAGES = ("data", "bm25", "first", "dense", "hard", "card")
DEFAULT_RECIPE = Path("trainer/configs/build_model.yaml")


class BuildError(ValueError):
    """Bad input to build-model; the message names it and what to do."""


def load_recipe(path: Path, budget: str) -> Dict:
    if not path.is_file():
        raise BuildError(
            f"{path}: no recipe file (run from a clone, or pass --recipe trainer/configs/build_model.yaml)"
        )
    recipe = yaml.safe_load(path.read_text())
    if not isinstance(recipe, dict) or budget not in recipe.get("budgets", {}):
        raise BuildError(f"{path}: no budget {budget!r} (budgets: {', '.join(recipe.get('budgets', {}))})")
    config = path.parent / recipe["train_config"]
    if not config.is_file():
        raise BuildError(f"{path}: its train_config {config} does not exist")
    recipe["train_config"] = config
    return recipe


def plan(recipe: Dict, budget: str, questions: int, work: Optional[Path] = None) -> List[Dict]:
    """Each stage with an estimate of its seconds: training steps x the median step time logged under
    ``work`` (either training stage's: they share batch and lengths), else the budget's ``seconds_per_step``;
    a training stage also says how many of its steps a checkpoint under ``work`` already holds."""
    from haystack_dcsr.training.checkpoints import newest_step

    spec = recipe["budgets"][budget]
    logged = [t for stage in ("hard", "first") for t in _step_times(work / stage)] if work else []
    per_step = round(statistics.median(logged) if logged else float(spec["seconds_per_step"]), 2)

    def steps(stage: str) -> int:
        settings = spec[stage]
        if settings.get("max_steps"):
            return int(settings["max_steps"])
        return int(settings.get("epochs", 1)) * max(questions // int(settings.get("batch_size", 32)), 1)

    def training(stage: str) -> Dict:
        return {
            "stage": stage,
            "seconds": steps(stage) * per_step,
            "steps": steps(stage),
            "step_s": per_step,
            "logged": bool(logged),
            "done_steps": min(newest_step(work / stage), steps(stage)) if work else 0,
        }

    return [
        {"stage": "data", "seconds": 30 + questions * 0.001},
        {"stage": "bm25", "seconds": 30 + questions * 0.005},
        training("first"),
        {"stage": "dense", "seconds": 120 + questions * 0.011},
        training("hard"),
        {"stage": "card", "seconds": 5},
    ]


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
    recipe_path: Path = DEFAULT_RECIPE,
    overrides: Sequence[str] = (),
    dry_run: bool = False,
) -> Path:
    """Build the recommended model into ``out`` (a model directory); see the module docstring."""
    from tqdm.auto import tqdm

    recipe = load_recipe(recipe_path, budget)
    train, out = Path(train), Path(out)
    if not train.is_file():
        raise BuildError(f"{train}: no such file (a SQuAD v1.1 JSON(.gz) file, or training records JSONL)")
    squad = ".jsonl" not in train.suffixes
    if not squad and corpus is None:
        raise BuildError(f"{train} holds training records: give the passages they come from with --corpus")
    work = out / "work"
    available = _count_questions(train, squad)
    questions = min(available, int(recipe["budgets"][budget].get("questions") or available))
    stages = plan(recipe, budget, questions, work)
    left = seconds_left(stages, work)
    if dry_run:
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
        return out
    work.mkdir(parents=True, exist_ok=True)
    paths = {
        "records": work / "train.jsonl",
        "corpus": work / "corpus.jsonl" if squad else Path(corpus),
        "bm25": work / "train_bm25.jsonl",
        "dense": work / "train_hard.jsonl",
        "dev": work / "dev.jsonl",
    }
    remaining = dict(left)
    bar = tqdm(total=len(STAGES), desc="build-model", unit=" stages")
    for stage in STAGES:
        marker = work / f"{stage}.done"
        if marker.is_file():
            remaining.pop(stage)
            bar.update(1)
            continue
        bar.set_postfix_str(f"{stage}; ETA {_duration(sum(remaining.values()))}")
        started = time.perf_counter()
        _run_stage(stage, recipe, budget, train, dev, squad, paths, work, out, overrides, questions)
        marker.write_text(json.dumps({"seconds": round(time.perf_counter() - started, 1)}))
        remaining.pop(stage)
        bar.update(1)
    bar.close()
    return out


def _run_stage(stage, recipe, budget, train, dev, squad, paths, work, out, overrides, questions) -> None:
    from haystack_dcsr.training.data import load_records, read_corpus, squad_to_records, write_corpus, write_records

    if stage == "data":
        if squad:
            records, passages = squad_to_records(train, id_prefix="train-")
            write_corpus(passages, paths["corpus"])
        else:
            records = load_records(train).records
        if questions < len(records):  # the budget's sample (seeded): every later stage reads only these
            write_records(random.Random(0).sample(records, questions), paths["records"])
        elif squad:
            write_records(records, paths["records"])
        else:  # the user's records as given, every field kept
            shutil.copyfile(train, paths["records"])
        if dev is not None:
            jsonl = ".jsonl" in dev.suffixes
            dev_records = load_records(dev).records if jsonl else squad_to_records(dev, id_prefix="dev-")[0]
            # validation reads the first dev_limit records: shuffled (seeded), they span many passages rather
            # than SQuAD's first hundred paragraphs, so the slice it ranks over is not a handful of passages
            random.Random(0).shuffle(dev_records)
            write_records(dev_records, paths["dev"])
    elif stage == "bm25":
        from haystack_dcsr.training.mining import bm25_search, mine_hard_negatives

        keep = int(recipe["bm25_negatives"])
        mine_hard_negatives(
            load_records(paths["records"]).records,
            bm25_search(read_corpus(paths["corpus"])),
            paths["bm25"],
            top_k=max(30, keep),
            keep=keep,
        )
    elif stage in ("first", "hard"):
        _train(stage, recipe, budget, paths, work, overrides)
        if stage == "hard":
            if out.joinpath("dcsr_model.json").exists():
                for item in ("query_encoder", "passage_encoder"):
                    shutil.rmtree(out / item, ignore_errors=True)
            best = _best(work / "hard")
            for item in best.iterdir():
                target = out / item.name
                if item.is_dir():
                    shutil.rmtree(target, ignore_errors=True)
                    shutil.copytree(item, target)
                else:
                    shutil.copy2(item, target)
    elif stage == "dense":
        from haystack_dcsr.training.mining import dense_search, mine_hard_negatives

        keep = int(recipe["dense_negatives"])
        mine_hard_negatives(
            load_records(paths["bm25"]).records,
            dense_search(_best(work / "first"), read_corpus(paths["corpus"])),
            paths["dense"],
            top_k=max(30, keep),
            keep=keep,
        )
    elif stage == "card":
        card = out / "README.md"
        if not card.is_file():
            raise BuildError(f"{out}: the DCSR-hard stage left no model card")
        spec = recipe["budgets"][budget]
        card.write_text(
            card.read_text()
            + f"\n## Built by `dcsr-train build-model --budget {budget}`\n\n"
            + "BM25 hard negatives, a first DCSR model "
            + f"({json.dumps(spec['first'])}), its own hard negatives, then this model ({json.dumps(spec['hard'])}).\n"
        )


def _train(stage, recipe, budget, paths, work, overrides) -> None:
    from haystack_dcsr.training.config import TrainConfig
    from haystack_dcsr.training.engine import Trainer

    settings = [f"{key}={json.dumps(value)}" for key, value in recipe["budgets"][budget][stage].items()]
    settings += [
        f"train_file={paths['bm25'] if stage == 'first' else paths['dense']}",
        f"output_dir={work / stage}",
        f"dev_file={paths['dev'] if paths['dev'].is_file() else 'null'}",
    ]
    config = TrainConfig.from_yaml(recipe["train_config"], settings + list(overrides))
    Trainer(config).train(resume=True)


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
