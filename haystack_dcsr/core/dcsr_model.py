"""DCSRModel: both towers and every setting the indexing and query stages must agree on, in one directory.

A DCSR index is only as good as the agreement between the code that wrote it and the code that
queries it: the same sentence splitter, the same pooling and normalisation on both towers, the
temperature the towers were trained for. Spread over node parameters, these had to be kept in step
by hand (``SentencePreprocessor(split_sentences=False)`` for a passage-level tower, for example).
A model directory now owns them::

    my-dcsr/
      dcsr_model.json       format version, level, pooling, normalize, temperature, max lengths, splitter
      query_encoder/        HF ``save_pretrained`` directory (no settings of its own)
      passage_encoder/      the same for the passage tower; absent when both towers share weights
      sentence_splitter.json  Punkt parameters fitted on a corpus (optional)

The towers carry no copy of the settings: a tower folder given alone (``my-dcsr/query_encoder``) reads
them from the ``dcsr_model.json`` beside it. Older layouts keep loading: a trainer output
(``query_encoder/`` + ``passage_encoder/``, each with ``dcsr_encoder.json``), one tower directory (HF,
sentence-transformers, or ``dcsr_encoder.json``), or a hub name of either. This module imports no
Haystack, so the 1.x nodes and the 2.x components load the same model.
"""

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, Union

import numpy as np

from haystack_dcsr.core.encoder import PassageTower, QueryTower, Tower
from haystack_dcsr.core.int8 import Quantize
from haystack_dcsr.core.models import (
    CONFIG_NAME,
    DEFAULT_MODEL,
    EncoderConfig,
    Level,
    Pooling,
    Precision,
    infer_config,
    resolve_model_path,
)
from haystack_dcsr.core.sentence_units import whole_span
from haystack_dcsr.core.splitting import SentenceSplitter

logger = logging.getLogger(__name__)

MODEL_FILE = "dcsr_model.json"
SPLITTER_FILE = "sentence_splitter.json"
QUERY_DIR, PASSAGE_DIR = "query_encoder", "passage_encoder"
FORMAT_VERSION = 1
_WARNED: set = set()  # tower files already named as disagreeing with their manifest


@dataclasses.dataclass
class DCSRSettings:
    """What every stage reads from the model rather than from its own parameters.

    :param level: ``sentence`` (DCSR: one vector per sentence, the passage read whole) or
        ``passage`` (DPR-style: one vector per unsplit passage; the splitter is then off).
    :param pooling: ``marker`` (hidden state at each ``<sent>``), ``mean`` or ``cls``.
    :param normalize: L2-normalised vectors (cosine geometry).
    :param temperature: the HasAns softmax temperature matching the towers' score scale.
    :param max_query_length: tokens per query.
    :param max_passage_length: tokens per passage window.
    :param language: the sentence splitter's language (``SentenceSplitter``).
    :param min_words: the sentence splitter's merge threshold (``SentenceSplitter``).
    """

    level: Level = "sentence"
    pooling: Pooling = "marker"
    normalize: bool = False
    temperature: float = 1.0
    max_query_length: int = 64
    max_passage_length: int = 512
    language: str = "english"
    min_words: int = 0
    format_version: int = FORMAT_VERSION

    def __post_init__(self):
        if self.format_version > FORMAT_VERSION:
            raise ValueError(
                f"This model directory has format version {self.format_version}, newer than this haystack-dcsr reads "
                f"({FORMAT_VERSION}): upgrade haystack-dcsr"
            )
        EncoderConfig(
            pooling=self.pooling,
            normalize=self.normalize,
            max_length=self.max_passage_length,
            temperature=self.temperature,
            level=self.level,
        )  # validates the shared values

    @property
    def split_sentences(self) -> bool:
        return self.level == "sentence"

    @classmethod
    def from_towers(cls, query: EncoderConfig, passage: EncoderConfig) -> "DCSRSettings":
        """Settings of an older layout, read from its towers' own configs (which must agree)."""
        for name in ("pooling", "normalize", "marker"):  # level describes the passage tower only
            if getattr(query, name) != getattr(passage, name):
                raise ValueError(
                    f"The query and passage towers disagree on {name} ({getattr(query, name)!r} vs "
                    f"{getattr(passage, name)!r}): their vectors would not be comparable"
                )
        return cls(
            level=passage.level,
            pooling=passage.pooling,
            normalize=passage.normalize,
            temperature=query.temperature,
            max_query_length=min(64, query.max_length),
            max_passage_length=passage.max_length,
        )

    @classmethod
    def paired(
        cls, query: "DCSRSettings", passage: "DCSRSettings", query_name: str, passage_name: str
    ) -> "DCSRSettings":
        """One model's settings from a query side and a passage side: the query side's temperature and query
        length, the passage side's level, passage length and splitter; they must pool and normalise alike."""
        for name in ("pooling", "normalize"):
            if getattr(query, name) != getattr(passage, name):
                raise ValueError(
                    f"The {query_name} and the passage model {passage_name!r} disagree on {name} "
                    f"({getattr(query, name)!r} vs {getattr(passage, name)!r}): their vectors would not be comparable"
                )
        return dataclasses.replace(passage, temperature=query.temperature, max_query_length=query.max_query_length)

    def given(self, **values: Any) -> "DCSRSettings":
        """These settings with the values a node was given in their place (``model_setting`` for each)."""
        return dataclasses.replace(self, **{name: model_setting(value, self, name) for name, value in values.items()})

    def tower_overrides(self, role: Literal["query", "passage"]) -> Dict[str, Any]:
        length = self.max_query_length if role == "query" else self.max_passage_length
        return dict(
            pooling=self.pooling,
            normalize=self.normalize,
            temperature=self.temperature,
            level=self.level,
            max_length=length,
        )


@dataclasses.dataclass
class ModelFiles:
    """Where a model's parts live, found without loading any weights (cheap: nodes call it in ``__init__``)."""

    query_dir: str
    passage_dir: str
    settings: DCSRSettings
    splitter_file: Optional[str] = None

    @classmethod
    def locate(
        cls, name_or_path: str, token: Optional[Union[str, bool]] = None, passage: Optional[str] = None
    ) -> "ModelFiles":
        """The parts of a local directory or hub name (``token``: Haystack's ``use_auth_token``). ``passage``
        takes the passage tower, and the settings that describe it (level, passage length, splitter), from
        another model; the two must pool and normalise alike."""
        files = cls._locate(name_or_path, token)
        if passage is None:
            return files
        other = cls._locate(passage, token)
        settings = DCSRSettings.paired(files.settings, other.settings, f"query model {name_or_path!r}", passage)
        return cls(files.query_dir, other.passage_dir, settings, other.splitter_file)

    @classmethod
    def _locate(cls, name_or_path: str, token: Optional[Union[str, bool]]) -> "ModelFiles":
        root = Path(resolve_model_path(name_or_path, token))
        manifest = root / MODEL_FILE
        splitter = str(root / SPLITTER_FILE) if (root / SPLITTER_FILE).is_file() else None
        if manifest.is_file():
            query, passage, settings = _read_manifest(root)
            return cls(query, passage, settings, splitter)
        if (root.parent / MODEL_FILE).is_file() and not (root / CONFIG_NAME).is_file():
            # one tower folder of a model directory, given alone: the model's settings, this tower's weights
            query, passage, settings = _read_manifest(root.parent)
            if root.resolve() in (Path(query).resolve(), Path(passage).resolve()):
                parent_splitter = root.parent / SPLITTER_FILE
                return cls(str(root), str(root), settings, str(parent_splitter) if parent_splitter.is_file() else None)
        if (root / QUERY_DIR).is_dir() and (root / PASSAGE_DIR).is_dir():  # a trainer output before DCSRModel
            query, passage = root / QUERY_DIR, root / PASSAGE_DIR
        else:  # one tower directory: both towers share its weights (zero-shot, or as the paper initialises)
            query = passage = root
        settings = DCSRSettings.from_towers(_tower_config(query), _tower_config(passage))
        return cls(str(query), str(passage), settings, splitter)


def _read_manifest(root: Path) -> Tuple[str, str, DCSRSettings]:
    """The tower folders and settings ``dcsr_model.json`` names."""
    manifest = root / MODEL_FILE
    state = json.loads(manifest.read_text())
    unknown = set(state) - {f.name for f in dataclasses.fields(DCSRSettings)} - {"query", "passage"}
    if unknown:
        raise ValueError(f"{manifest}: unknown settings {sorted(unknown)}")
    query = _inside(root, state.pop("query", QUERY_DIR), manifest)
    passage = state.pop("passage", None)
    passage = _inside(root, passage, manifest) if passage else query
    settings = DCSRSettings(**state)
    _warn_where_towers_disagree(manifest, settings, {"query": query, "passage": passage})
    return query, passage, settings


class DCSRModel:
    """The query tower, the passage tower (loaded on first use) and their shared settings.

        model = DCSRModel.from_pretrained("all-MiniLM-L6-v2")   # or a saved DCSR directory / hub name
        sentences = model.splitter().split(passage_text)
        vectors = model.encode_passages([sentences])            # one row per sentence
        queries = model.encode_queries(["who wrote it?"])

    :param files: where the model's parts live (``ModelFiles.locate``); ``from_pretrained`` finds them.
    :param device: as for the towers (``Tower``), like ``use_gpu``, ``precision`` and ``quantize``.
    """

    def __init__(
        self,
        files: ModelFiles,
        device: Optional[str] = None,
        use_gpu: bool = True,
        precision: Precision = "auto",
        quantize: Optional[Quantize] = None,
    ):
        self.files = files
        self.settings = files.settings
        self._tower_options = dict(device=device, use_gpu=use_gpu, precision=precision, quantize=quantize)
        self._query_tower: Optional[QueryTower] = None
        self._passage_tower: Optional[PassageTower] = None

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str = DEFAULT_MODEL,
        device: Optional[str] = None,
        use_gpu: bool = True,
        precision: Precision = "auto",
        quantize: Optional[Quantize] = None,
        token: Optional[Union[str, bool]] = None,
        passage: Optional[str] = None,
        **given: Any,
    ) -> "DCSRModel":
        """Finds the parts now (a missing directory fails here); each tower loads on first use, so an
        indexing service never loads the query tower and a query service never the passage tower.
        ``passage``: the passage tower from another model (``ModelFiles.locate``); ``given``: settings a
        node was given (``DCSRSettings`` names; None keeps the model's)."""
        files = ModelFiles.locate(name_or_path, token, passage)
        files = dataclasses.replace(files, settings=files.settings.given(**given))
        return cls(files, device=device, use_gpu=use_gpu, precision=precision, quantize=quantize)

    @property
    def query_tower(self) -> QueryTower:
        if self._query_tower is None:
            self._query_tower = QueryTower(
                self.files.query_dir, **self.settings.tower_overrides("query"), **self._tower_options
            )
            self._check_dims()
        return self._query_tower

    @property
    def passage_tower(self) -> PassageTower:
        if self._passage_tower is None:
            self._passage_tower = PassageTower(
                self.files.passage_dir, **self.settings.tower_overrides("passage"), **self._tower_options
            )
            self._check_dims()
        return self._passage_tower

    def _check_dims(self) -> None:
        if self._query_tower is not None and self._passage_tower is not None:
            if self._query_tower.dim != self._passage_tower.dim:
                raise ValueError(
                    f"The passage tower has dimension {self._passage_tower.dim} but the query tower "
                    f"{self._query_tower.dim}: they cannot share an index"
                )

    @property
    def dim(self) -> int:
        loaded = self._query_tower or self._passage_tower or self.query_tower
        return loaded.dim

    @property
    def temperature(self) -> float:
        return self.settings.temperature

    def splitter(self) -> SentenceSplitter:
        """The sentence splitter the passages must be indexed with (fitted parameters when saved)."""
        return model_splitter(self.files)

    def passage_units(self, texts: Sequence[str]) -> List[List[str]]:
        """Each passage as the units this model encodes: its sentences, split as the retrievers split them,
        or the whole passage for a passage-level model (none for blank text)."""
        splitter = self.splitter() if self.settings.split_sentences else None
        return [[text[a:b] for a, b in (splitter.spans(text) if splitter else whole_span(text))] for text in texts]

    def encode_queries(self, queries: Sequence[str], batch_size: int = 64, progress_bar: bool = False) -> np.ndarray:
        return self.query_tower.encode(queries, batch_size=batch_size, progress_bar=progress_bar)

    def encode_passages(
        self, passages: Sequence[Sequence[str]], batch_size: int = 32, progress_bar: bool = False
    ) -> np.ndarray:
        """One row per sentence of every passage (each a list of its sentences), in order."""
        return self.passage_tower.encode(passages, batch_size=batch_size, progress_bar=progress_bar)

    def save_pretrained(self, directory: Union[str, Path], splitter: Optional[SentenceSplitter] = None) -> None:
        """Both towers (one copy when they share weights), the settings and, if given, a fitted splitter."""
        shared = self.files.passage_dir == self.files.query_dir
        save_towers(
            directory,
            self.settings,
            self.query_tower,
            None if shared else self.passage_tower,
            splitter=splitter,
            splitter_file=self.files.splitter_file,
        )


def save_towers(
    directory: Union[str, Path],
    settings: DCSRSettings,
    query: Tower,
    passage: Optional[Tower] = None,
    splitter: Optional[SentenceSplitter] = None,
    splitter_file: Optional[str] = None,
) -> None:
    """A model directory from loaded towers: ``query_encoder/``, ``passage_encoder/`` (none when ``passage`` is
    None: one tower for both sides), the splitter (fitted, or copied from ``splitter_file``) and, last,
    ``dcsr_model.json``, the towers' only config. ``save_pretrained``, the trainer and ``DCSRRetriever.save``
    write models with it."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    query.save(directory / QUERY_DIR, own_config=False)
    if passage is not None:
        passage.save(directory / PASSAGE_DIR, own_config=False)
    if splitter is not None:
        splitter.save(directory / SPLITTER_FILE)
    elif splitter_file:
        (directory / SPLITTER_FILE).write_text(Path(splitter_file).read_text())
    write_manifest(directory, settings, shared=passage is None)


def model_setting(given: Any, settings: DCSRSettings, name: str) -> Any:
    """The one precedence rule between a node parameter and the model's own setting: a value given to the
    node (not None) wins for that node; None means the model's (``dcsr_model.json``). Every adapter reads
    temperature and the like through this."""
    return getattr(settings, name) if given is None else given


def write_manifest(directory: Union[str, Path], settings: DCSRSettings, shared: bool = False) -> None:
    """``dcsr_model.json`` beside ``query_encoder/`` (and ``passage_encoder/`` unless ``shared``): what
    makes a directory a DCSRModel. The trainer calls it after saving both towers."""
    state: Dict[str, Any] = {
        "query": QUERY_DIR,
        "passage": None if shared else PASSAGE_DIR,
        **dataclasses.asdict(settings),
    }
    (Path(directory) / MODEL_FILE).write_text(json.dumps(state, indent=1))


def _warn_where_towers_disagree(manifest: Path, settings: DCSRSettings, towers: Dict[str, str]) -> None:
    """Towers saved before this version carry their own ``dcsr_encoder.json``; inside a model directory it is
    not a second owner: ``dcsr_model.json`` wins. A tower file that says otherwise (edited by hand, copied from
    another run) is named, so the difference is not silent."""
    for role, directory in towers.items():
        own = Path(directory) / CONFIG_NAME
        if not own.is_file():
            continue
        tower = json.loads(own.read_text())
        differ = [
            f"{name} {tower[name]!r} (model: {value!r})"
            for name, value in (
                ("pooling", settings.pooling),
                ("normalize", settings.normalize),
                ("temperature", settings.temperature),
            )
            if name in tower and tower[name] != value
        ]
        warning = (str(manifest.resolve()), role, tuple(differ))
        if differ and warning not in _WARNED:  # once per process: the adapters locate a model more than once
            _WARNED.add(warning)
            logger.warning(
                "%s: the %s tower's %s says %s; %s wins (it owns these settings)",
                manifest.parent,
                role,
                CONFIG_NAME,
                ", ".join(differ),
                MODEL_FILE,
            )


def _inside(root: Path, relative: str, manifest: Path) -> str:
    """A tower folder named in ``dcsr_model.json``: a path inside the model directory, nothing else (a
    model must not load weights or tokenizers from elsewhere on the machine)."""
    if not isinstance(relative, str) or not relative or Path(relative).is_absolute():
        raise ValueError(f"{manifest}: tower folder {relative!r} must be a relative path inside the model directory")
    path = (root / relative).resolve()
    if not path.is_relative_to(root.resolve()):
        raise ValueError(f"{manifest}: tower folder {relative!r} points outside the model directory {root}")
    return str(root / relative)


def manifest_tower_config(directory: Path, role: str) -> Optional[EncoderConfig]:
    """The config of a tower folder inside a model directory, read from the ``dcsr_model.json`` beside it as
    its ``role`` tower (None when the folder is not one of that model's towers)."""
    root = directory.parent
    if not (root / MODEL_FILE).is_file():
        return None
    query, passage, settings = _read_manifest(root)
    if directory.resolve() not in (Path(query).resolve(), Path(passage).resolve()):
        return None
    return EncoderConfig(**settings.tower_overrides(role))


def model_splitter(files: ModelFiles) -> SentenceSplitter:
    """The splitter a model's passages are indexed with, without loading its towers."""
    return SentenceSplitter.configured(files.settings.language, files.settings.min_words, files.splitter_file)


def _tower_config(directory: Path) -> EncoderConfig:
    """The tower's own config (``dcsr_encoder.json``, else inferred), without loading its weights."""
    config = json.loads((directory / "config.json").read_text()) if (directory / "config.json").is_file() else {}
    return infer_config(str(directory), config.get("max_position_embeddings", 512))
