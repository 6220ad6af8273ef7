"""Training configuration: one dataclass, read from YAML, overridable from the command line."""

import dataclasses
import typing
from pathlib import Path
from typing import Any, List, Optional, Union

import yaml

from haystack_dcsr.models import DEFAULT_MODEL


@dataclasses.dataclass
class TrainConfig:
    train_file: str = ""
    dev_file: Optional[str] = None
    output_dir: str = "runs/dcsr"
    # towers
    base_model: str = DEFAULT_MODEL
    query_model: Optional[str] = None  # None: base_model
    passage_model: Optional[str] = None  # None: base_model
    pooling: Optional[str] = None  # None: marker (sentence level) / cls (passage level)
    normalize: Optional[bool] = None  # None: the base model's own (True for sentence-transformers models)
    max_query_len: int = 64
    max_passage_len: int = 256
    # samples
    level: str = "sentence"  # sentence = DCSR, passage = DPR
    negatives: Union[str, List[str]] = "+1 in-passage +1 BM25 random"
    exclude_adjacent: bool = True
    mask_false_negatives: bool = True
    train_meqs: bool = True
    meq_oversample: int = 1  # records with an MEQ enter each epoch this many times (fresh q+/q-/negatives)
    # optimisation
    batch_size: int = 16  # questions per global batch (all ranks together)
    epochs: int = 1
    max_steps: Optional[int] = None
    lr: float = 2e-5
    weight_decay: float = 0.0
    warmup_steps: int = 100
    grad_accumulation: int = 1
    grad_cache_chunk: Optional[int] = None  # gradient cache: encode this many windows per pass (None: off)
    max_grad_norm: float = 2.0
    precision: str = "auto"  # autocast on CUDA: bf16 where supported, else fp16; fp32 on CPU
    device: Optional[str] = None  # None: cuda (this rank's GPU) when available, else cpu; "cpu" forces the CPU
    temperature: Optional[float] = None  # QP softmax temperature; None: the base model's own (0.05 cosine, 1.0 dot)
    # MEQ query-side loss: L = QP + qq_weight * QQ
    qq_form: Optional[str] = None  # None, infonce, dot or triplet
    qq_weight: float = 1.0
    qq_start_epoch: int = 0
    qq_margin: float = 1.0
    qq_fallback_positive: str = "dropout"  # without a paraphrase: "dropout" (q again, other dropout mask) or "none"
    # bookkeeping
    seed: int = 42
    checkpoint_every: int = 500
    log_every: int = 10
    dev_limit: int = 1000
    dev_batch_size: int = 32

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

    @property
    def resolved_pooling(self) -> str:
        return self.pooling or ("marker" if self.level == "sentence" else "cls")

    @classmethod
    def from_yaml(cls, path: Optional[Union[str, Path]] = None, overrides: Optional[List[str]] = None) -> "TrainConfig":
        values = yaml.safe_load(Path(path).read_text()) if path else {}
        values = values or {}
        for item in overrides or []:
            key, sep, raw = item.partition("=")
            if not sep:
                raise ConfigError(f"Override {item!r} is not key=value")
            values[key.strip()] = yaml.safe_load(raw)
        for name, hint in typing.get_type_hints(cls).items():
            if isinstance(values.get(name), str) and _matches(1.0, hint) and not _matches("", hint):
                values[name] = _number(values[name])
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(
                f"Unknown config keys: {', '.join(unknown)} (see python -m haystack_dcsr.training train --help)"
            )
        return cls(**values)

    def to_yaml(self) -> str:
        return yaml.safe_dump(dataclasses.asdict(self), sort_keys=False)


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
