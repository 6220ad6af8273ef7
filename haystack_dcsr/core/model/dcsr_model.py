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
from typing import Any, List, Optional, Sequence, Union

import numpy as np

from haystack_dcsr.core.model.encoder import PassageTower, QueryTower, Tower
from haystack_dcsr.core.model.int8 import Quantize
from haystack_dcsr.core.model.model_settings import (  # noqa: F401 (re-exported: the model's settings and their file)
    MODEL_FILE,
    PASSAGE_DIR,
    QUERY_DIR,
    DCSRSettings,
    enclosing_model_settings,
    model_setting,
    read_manifest,
    write_manifest,
)
from haystack_dcsr.core.model.models import (
    DEFAULT_MODEL,
    EncoderConfig,
    Precision,
    infer_config,
    legacy_temperature,
    resolve_model_path,
)
from haystack_dcsr.core.storage.checksums import files_under, verify_checksums, write_checksums
from haystack_dcsr.core.text.sentence_units import whole_span
from haystack_dcsr.core.text.splitting import SentenceSplitter

logger = logging.getLogger(__name__)

SPLITTER_FILE = "sentence_splitter.json"


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
            query, passage, settings = read_manifest(root)
            verify_checksums(root)  # the towers' weights and the splitter, as saved
            return cls(query, passage, settings, splitter)
        in_model = enclosing_model_settings(root)
        if in_model is not None:  # one tower folder of a model directory: its weights, the model's settings
            verify_checksums(root.parent, only=(f"{root.name}/",))
            parent_splitter = root.parent / SPLITTER_FILE
            return cls(str(root), str(root), in_model, str(parent_splitter) if parent_splitter.is_file() else None)
        if (root / QUERY_DIR).is_dir() and (root / PASSAGE_DIR).is_dir():  # a trainer output before DCSRModel
            query, passage = root / QUERY_DIR, root / PASSAGE_DIR
        else:  # one tower directory: both towers share its weights (zero-shot, or as the paper initialises)
            query = passage = root
        query_config = _tower_config(query)
        temperature = legacy_temperature(str(query), query_config.normalize)
        settings = DCSRSettings.from_towers(query_config, _tower_config(passage), temperature)
        return cls(str(query), str(passage), settings, splitter)


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
    write_checksums(directory, files_under(directory, QUERY_DIR, PASSAGE_DIR, SPLITTER_FILE))
    write_manifest(directory, settings, shared=passage is None)


def model_splitter(files: ModelFiles) -> SentenceSplitter:
    """The splitter a model's passages are indexed with, without loading its towers."""
    return SentenceSplitter.configured(files.settings.language, files.settings.min_words, files.splitter_file)


def _tower_config(directory: Path) -> EncoderConfig:
    """The tower's own config (``dcsr_encoder.json``, else inferred), without loading its weights."""
    config = json.loads((directory / "config.json").read_text()) if (directory / "config.json").is_file() else {}
    return infer_config(str(directory), config.get("max_position_embeddings", 512))
