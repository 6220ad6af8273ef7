"""Training configurations (the towers' and the cross-encoder's), read from YAML, overridable from the command line."""

import dataclasses
import functools
import typing
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Union

import yaml

from haystack_dcsr.core.model.models import DEFAULT_MODEL, MARKER_INITS
from haystack_dcsr.core.ranking.parameters import renamed


def option(default: Any, help: str) -> Any:
    """A config field with its help text (listed by ``dcsr-train train --help``)."""
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata={"help": help})
    return dataclasses.field(default=default, metadata={"help": help})


class FieldsConfig:
    """A dataclass config read from YAML and ``--set KEY=VALUE`` overrides, its fields type-checked.

    ``command`` is the ``dcsr-train`` command whose ``--help`` lists the fields (named in errors)."""

    command = "train"

    @classmethod
    def from_yaml(
        cls,
        path: Optional[Union[str, Path]] = None,
        overrides: Optional[List[str]] = None,
        settings: Optional[Mapping[str, Any]] = None,
    ):
        """The config in ``path`` (a file, or a shipped recipe's name: ``squad_dcsr.yaml``), then ``settings``
        (values as objects: ``{"lr": 3e-5}``), then ``overrides`` (the command line's ``KEY=VALUE`` strings)."""
        from haystack_dcsr.training.recipes import recipe_path

        values = yaml.safe_load(recipe_path(path).read_text()) if path else {}
        values = {} if values is None else values
        if not isinstance(values, dict):
            raise ConfigError(
                f"{path}: a config file is a mapping of settings (name: value, one per line), "
                f"not a {type(values).__name__}"
            )
        values.update(settings or {})
        values.update(parse_overrides(overrides or []))
        values = with_current_names(cls.__name__, values)  # recipes and command lines written with an older name
        for name, hint in typing.get_type_hints(cls).items():
            if isinstance(values.get(name), str) and _matches(1.0, hint) and not _matches("", hint):
                values[name] = _number(values[name])
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(
                f"Unknown config keys: {', '.join(unknown)} (see python -m haystack_dcsr.training {cls.command} --help)"
            )
        return cls(**values)

    def to_yaml(self) -> str:
        return yaml.safe_dump(dataclasses.asdict(self), sort_keys=False)


# settings renamed to the core's one name for each (``DCSRSettings``, ``dcsr_model.json``): old name -> new
RENAMED = {"max_query_len": "max_query_length", "max_passage_len": "max_passage_length"}


def with_current_names(owner: str, values: Dict[str, Any]) -> Dict[str, Any]:
    """``values`` with each old name (``RENAMED``) under its new one, with a DeprecationWarning; both is an error."""
    values = dict(values)
    for old, new in RENAMED.items():
        if old in values:
            values[new] = renamed(owner, new, values.pop(new, None), old, values.pop(old))
    return values


def accepting_old_names(cls):
    """``cls(max_passage_len=...)`` as ``cls(max_passage_length=...)``, with a DeprecationWarning: code written
    for the old names keeps working, as recipes and command lines do."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **with_current_names(cls.__name__, kwargs))

    cls.__init__ = __init__
    return cls


@accepting_old_names
@dataclasses.dataclass
class TrainConfig(FieldsConfig):
    # data and output
    train_file: str = option("", "training records (DPR-format JSON/JSONL(.gz), e.g. from mine-bm25)")
    dev_file: Optional[str] = option(None, "dev records: in-batch and retrieval validation, best/ selection")
    output_dir: str = option("runs/dcsr", "where best/, last/, checkpoints and log.jsonl go")
    # towers
    base_model: str = option(DEFAULT_MODEL, "HF model or hub name, or a DCSR model directory to train further")
    query_model: Optional[str] = option(None, "query tower to start from (null: base_model's)")
    passage_model: Optional[str] = option(None, "passage tower to start from (null: base_model's)")
    pooling: Optional[str] = option(None, "marker, mean or cls (null: marker at sentence level, cls at passage)")
    normalize: Optional[bool] = option(None, "L2-normalise vectors (null: the base model's own)")
    marker_init: Optional[str] = option(
        None, "where a new <sent> marker starts: cls (copy of [CLS]), mean or random (null: cls; new markers only)"
    )
    marker_lr: Optional[float] = option(
        None, "own learning rate for the <sent> marker's embedding (an added offset; null: no own group)"
    )
    marker_warmup_steps: int = option(0, "first steps train only the marker's embedding (needs marker pooling)")
    max_query_length: int = option(64, "tokens per question")
    max_passage_length: int = option(256, "tokens per passage window (longer passages are windowed)")
    # samples
    level: str = option("sentence", "sentence = DCSR (a vector per sentence), passage = DPR")
    negatives: Union[str, List[str]] = option(
        "+1 in-passage +1 BM25 random", "negative recipe: a name of samples.RECIPES or a list of in_passage/bm25"
    )
    exclude_adjacent: bool = option(True, "no in-passage negative next to the positive sentence")
    mask_false_negatives: bool = option(True, "mask candidates that contain the answer (or are the positive)")
    train_meqs: bool = option(True, "MEQs (q-) of records also train as questions with their own QP term")
    meq_oversample: int = option(1, "records with an MEQ enter each epoch this many times (fresh q+/q-/negatives)")
    frozen_passages: bool = option(
        False,
        "query-side tuning: the passage tower stays fixed and each question is scored against every training "
        "sentence, encoded once (ADORE / DensePhrases); only the query tower trains",
    )
    frozen_mask_top: int = option(100, "query-side tuning: answer-bearing rows among a question's top N are masked")
    frozen_target: str = option(
        "sentence", "query-side tuning's target: sentence (the answer sentence) or passage (the gold passage's rows)"
    )
    meq_per_batch: int = option(
        0, "MEQ-centred batches: this many (q, MEQ) groups in every batch, the rest other questions (0: shuffled)"
    )
    meq_records_only: bool = option(
        False,
        "train on the records that carry MEQs alone: a contrast stage that continues a trained model "
        "(base_model: its directory); with train_meqs every batch is made of (q, MEQ) groups",
    )
    # optimisation
    batch_size: int = option(16, "questions per global batch (all ranks together)")
    epochs: int = option(1, "passes over the training records")
    max_steps: Optional[int] = option(None, "stop after this many optimiser steps (null: epochs decide)")
    lr: float = option(2e-5, "peak learning rate (linear warm-up and decay)")
    weight_decay: float = option(0.0, "AdamW weight decay")
    warmup_steps: int = option(100, "linear warm-up steps")
    grad_accumulation: int = option(1, "micro-batches per optimiser step")
    grad_cache_chunk: Optional[int] = option(None, "gradient cache: windows encoded per pass (null: off)")
    max_grad_norm: float = option(2.0, "gradient clipping norm (0: off)")
    precision: str = option("auto", "auto (bf16/fp16 autocast on CUDA, fp32 on CPU), fp32, fp16 or bf16")
    device: Optional[str] = option(None, "cpu, cuda or cuda:N (null: this rank's GPU when available)")
    temperature: Optional[float] = option(None, "QP softmax temperature (null: 0.05 cosine models, 1.0 dot)")
    # MEQ query-side loss: L = QP + qq_weight * QQ
    qq_form: Optional[str] = option(None, "QQ loss: infonce, dot, triplet or null (off)")
    qq_weight: float = option(1.0, "lambda in L = QP + lambda * QQ")
    qq_start_epoch: int = option(0, "first epoch with the QQ term")
    qq_margin: float = option(1.0, "triplet margin, in QP's units (q . x / temperature)")
    qq_fallback_positive: str = option("dropout", "q+ without a paraphrase: dropout (q, another mask) or none")
    # validation, checkpoints, logs
    seed: int = option(42, "seed of sampling, dropout and initialisation")
    validate_every: Optional[int] = option(None, "also validate every N steps (null: each epoch and at the end)")
    retrieval_dev_passages: int = option(
        2000, "retrieval validation: rank the dev questions' gold passages among this many dev passages (0: off)"
    )
    best_metric: str = option("mrr@10", "what picks best/: mrr@10 (retrieval) or average_rank (in-batch)")
    checkpoint_every: int = option(500, "save a resumable checkpoint every N steps (0: only at the end)")
    keep_checkpoints: int = option(1, "checkpoints kept on disk (the newest); resume reads the newest")
    tensorboard: Optional[bool] = option(None, "true: log to TensorBoard (warn if missing); null: when installed")
    log_every: int = option(10, "log.jsonl / progress interval in steps")
    dev_limit: int = option(1000, "dev records used for validation")
    dev_batch_size: int = option(32, "questions per in-batch validation batch")

    def __post_init__(self):
        check_types(self)
        if self.level not in ("sentence", "passage"):
            raise ValueError(f"level must be 'sentence' or 'passage', got {self.level!r}")
        if self.qq_form not in (None, "infonce", "dot", "triplet"):
            raise ValueError(f"qq_form must be infonce, dot, triplet or null, got {self.qq_form!r}")
        if self.qq_fallback_positive not in ("dropout", "none"):
            raise ValueError(f"qq_fallback_positive must be 'dropout' or 'none', got {self.qq_fallback_positive!r}")
        if self.batch_size < 1 or self.grad_accumulation < 1:
            raise ValueError("batch_size and grad_accumulation must be >= 1")
        if self.device is not None and self.device.split(":")[0] not in ("cpu", "cuda"):
            raise ValueError(f"device must be cpu, cuda, cuda:N or null, got {self.device!r}")
        if self.grad_cache_chunk is not None and self.grad_cache_chunk < 1:
            raise ValueError(f"grad_cache_chunk must be >= 1 or null, got {self.grad_cache_chunk}")
        if self.best_metric not in ("mrr@10", "average_rank"):
            raise ValueError(f"best_metric must be mrr@10 or average_rank, got {self.best_metric!r}")
        if self.keep_checkpoints < 1:
            raise ValueError(f"keep_checkpoints must be >= 1, got {self.keep_checkpoints}")
        if self.meq_per_batch < 0 or (self.meq_per_batch and 2 * self.meq_per_batch >= self.batch_size):
            raise ValueError(f"meq_per_batch must be >= 0 and leave room in a batch of {self.batch_size}")
        if self.meq_per_batch and self.meq_records_only:
            raise ValueError("meq_records_only leaves no other questions to fill meq_per_batch's batches: use one")
        if self.meq_per_batch and self.meq_oversample != 1:
            raise ValueError("meq_per_batch and meq_oversample both set how often MEQs recur: use one")
        if self.marker_init is not None and self.marker_init not in MARKER_INITS:
            raise ValueError(f"marker_init must be cls, mean, random or null, got {self.marker_init!r}")
        uses_marker = self.marker_init is not None or self.marker_lr is not None or self.marker_warmup_steps
        if uses_marker and self.resolved_pooling != "marker":
            raise ValueError(
                f"marker_init, marker_lr and marker_warmup_steps need pooling 'marker', not {self.resolved_pooling!r}"
            )
        if self.marker_warmup_steps < 0 or (self.marker_lr is not None and self.marker_lr <= 0):
            raise ValueError("marker_warmup_steps must be >= 0 and marker_lr > 0")
        if self.frozen_passages and (self.grad_cache_chunk or self.marker_lr is not None or self.marker_warmup_steps):
            raise ValueError(
                "frozen_passages trains the query tower alone: grad_cache_chunk, marker_lr and marker_warmup_steps "
                "(which train the passage side) do not apply"
            )
        if self.frozen_target not in ("sentence", "passage"):
            raise ValueError(f"frozen_target must be 'sentence' or 'passage', got {self.frozen_target!r}")
        if self.frozen_mask_top < 0:
            raise ValueError(f"frozen_mask_top must be >= 0, got {self.frozen_mask_top}")
        if self.validate_every is not None and self.validate_every < 1:
            raise ValueError(f"validate_every must be >= 1 or null, got {self.validate_every}")

    @property
    def resolved_pooling(self) -> str:
        return self.pooling or ("marker" if self.level == "sentence" else "cls")


@dataclasses.dataclass
class CrossEncoderConfig(FieldsConfig):
    """Fields of ``dcsr-train train-cross-encoder`` (``training/cross_encoder.py`` says why each default)."""

    command = "train-cross-encoder"
    train_file: str = option(
        "data/squad_train_meq.jsonl", "records with BM25 hard negatives and MEQs (negative_questions)"
    )
    output_dir: str = option("runs/cross_encoder", "where last/, log.jsonl and the config go")
    model: str = option(DEFAULT_MODEL, "initial weights (HF directory or hub name); a one-logit head is added")
    max_steps: int = option(400, "optimizer steps")
    questions_per_batch: int = option(8, "groups (a question, its positive and its negatives) per step")
    negatives: int = option(3, "negatives per group: the MEQ's gold first where there is one, then BM25")
    meq_share: float = option(0.5, "share of a batch's groups that are MEQ groups (a question with an MEQ, or the MEQ)")
    lr: float = option(5e-5, "peak learning rate of the encoder (linear warm-up and decay)")
    head_lr: float = option(1e-3, "peak learning rate of the new head (pooler and classifier): it starts random")
    warmup_ratio: float = option(0.05, "share of max_steps spent warming up")
    max_length: int = option(256, "question + passage tokens; the passage is truncated")
    chunk: int = option(16, "pairs per forward pass, sorted by length: the same loss with fewer padded tokens")
    seed: int = option(42, "data order, negatives and the new head")
    log_every: int = option(10, "log.jsonl interval in steps")
    save_every: int = option(100, "steps between writes of last/")

    def __post_init__(self):
        check_types(self)
        if not 0.0 <= self.meq_share <= 1.0:
            raise ConfigError(f"meq_share must be within [0, 1], got {self.meq_share}")
        for name in ("max_steps", "questions_per_batch", "negatives", "max_length", "chunk", "log_every", "save_every"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")


def parse_overrides(overrides: List[str]) -> Dict[str, Any]:
    """``["lr=3e-5", "pooling=mean"]`` -> ``{"lr": 3e-05, "pooling": "mean"}`` (each value read as YAML)."""
    values = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"Override {item!r} is not key=value")
        values[key.strip()] = yaml.safe_load(raw)
    return values


class ConfigError(ValueError):
    """A config value of the wrong type or range; the message names the field."""


def check_types(config) -> None:
    """Every field holds a value of its annotated type (YAML and ``--set`` values arrive untyped)."""
    hints = typing.get_type_hints(type(config))
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if not _matches(value, hints[field.name]):
            raise ConfigError(
                f"{field.name} must be {_describe(hints[field.name])}, got {value!r} ({type(value).__name__}); "
                f"e.g. --set {field.name}={field.default!r}"
            )


def _number(text: str):
    """YAML 1.1 reads '1e-5' (no dot) as a string: numbers for number fields, else left for the check."""
    try:
        return float(text)
    except ValueError:
        return text


def _matches(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin is Union:
        return any(_matches(value, arg) for arg in typing.get_args(hint))
    if origin in (list, List):
        (item,) = typing.get_args(hint) or (Any,)
        return isinstance(value, list) and all(_matches(v, item) for v in value)
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is Union:
        return " or ".join(_describe(arg) for arg in typing.get_args(hint))
    if origin in (list, List):
        return f"a list of {_describe(typing.get_args(hint)[0])}"
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string", type(None): "null"}.get(
        hint, str(hint)
    )


def describe_fields(config_class: type = None) -> str:
    """Every field with its type, default and help: the body of ``dcsr-train train --help``."""
    config_class = config_class or TrainConfig
    hints = typing.get_type_hints(config_class)
    lines = ["config fields (YAML keys; override with --set KEY=VALUE):"]
    for field in dataclasses.fields(config_class):
        default = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
        lines.append(f"  {field.name} ({_describe(hints[field.name])}, default {default!r})")
        lines.append(f"      {field.metadata.get('help', '')}")
    return "\n".join(lines)
