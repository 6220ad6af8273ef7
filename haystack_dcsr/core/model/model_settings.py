"""The settings a DCSR model owns, and ``dcsr_model.json``, the file that holds them.

``DCSRSettings`` is what every stage reads from the model rather than from its own parameters;
``model_setting`` is the one rule by which a node parameter overrides one. The manifest names the tower
folders and carries the settings; it is their only copy, so a tower folder read alone (by ``ModelFiles``,
or by a tower itself: ``manifest_tower_config``) takes its settings from the manifest beside it. This
module knows no towers' weights, so the towers (``encoder``) and the model (``dcsr_model``) both build on it.
"""

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any, Dict, Literal, Optional, Tuple, Union

from haystack_dcsr.core.model.models import CONFIG_NAME, EncoderConfig, Level, Pooling

logger = logging.getLogger(__name__)

MODEL_FILE = "dcsr_model.json"
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
            pooling=self.pooling, normalize=self.normalize, max_length=self.max_passage_length, level=self.level
        )  # validates the shared values
        if isinstance(self.temperature, bool) or not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")

    @property
    def split_sentences(self) -> bool:
        return self.level == "sentence"

    @classmethod
    def from_towers(cls, query: EncoderConfig, passage: EncoderConfig, temperature: float) -> "DCSRSettings":
        """Settings of an older layout, read from its towers' own configs (which must agree), with the HasAns
        ``temperature`` (which no tower config carries: ``models.legacy_temperature``)."""
        # level describes the passage tower only
        _refuse_disagreement(query, passage, ("pooling", "normalize", "marker"), "The query and passage towers")
        return cls(
            level=passage.level,
            pooling=passage.pooling,
            normalize=passage.normalize,
            temperature=temperature,
            max_query_length=min(64, query.max_length),
            max_passage_length=passage.max_length,
        )

    @classmethod
    def paired(
        cls, query: "DCSRSettings", passage: "DCSRSettings", query_name: str, passage_name: str
    ) -> "DCSRSettings":
        """One model's settings from a query side and a passage side: the query side's temperature and query
        length, the passage side's level, passage length and splitter; they must pool and normalise alike."""
        _refuse_disagreement(
            query, passage, ("pooling", "normalize"), f"The {query_name} and the passage model {passage_name!r}"
        )
        return dataclasses.replace(passage, temperature=query.temperature, max_query_length=query.max_query_length)

    def given(self, **values: Any) -> "DCSRSettings":
        """These settings with the values a node was given in their place (``model_setting`` for each)."""
        return dataclasses.replace(self, **{name: model_setting(value, self, name) for name, value in values.items()})

    def tower_overrides(self, role: Literal["query", "passage"]) -> Dict[str, Any]:
        length = self.max_query_length if role == "query" else self.max_passage_length
        return dict(pooling=self.pooling, normalize=self.normalize, level=self.level, max_length=length)


def _refuse_disagreement(query: Any, passage: Any, names: Tuple[str, ...], sides: str) -> None:
    """Two sides of one model must encode alike: the first of ``names`` they differ on is refused."""
    for name in names:
        if getattr(query, name) != getattr(passage, name):
            raise ValueError(
                f"{sides} disagree on {name} ({getattr(query, name)!r} vs {getattr(passage, name)!r}): their vectors "
                "would not be comparable"
            )


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


def read_manifest(root: Path) -> Tuple[str, str, DCSRSettings]:
    """The tower folders and settings ``dcsr_model.json`` names."""
    manifest = root / MODEL_FILE
    try:
        state = json.loads(manifest.read_text())
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"{manifest}: not valid JSON ({error}): the model directory's settings file is damaged")
    if not isinstance(state, dict):
        raise ValueError(f"{manifest}: expected a JSON object of settings, got a {type(state).__name__}")
    unknown = set(state) - {f.name for f in dataclasses.fields(DCSRSettings)} - {"query", "passage"}
    if unknown:
        raise ValueError(f"{manifest}: unknown settings {sorted(unknown)}")
    query = _inside(root, state.pop("query", QUERY_DIR), manifest)
    passage = state.pop("passage", None)
    passage = _inside(root, passage, manifest) if passage else query
    check_manifest_fields(manifest, state)
    settings = DCSRSettings(**state)
    _warn_where_towers_disagree(manifest, settings, {"query": query, "passage": passage})
    return query, passage, settings


# every setting that changes what the model computes: a manifest without one would load with a default that may
# differ from how the model was trained, silently, so each is required, with its kind
REQUIRED_SETTINGS = {
    "level": (str, "sentence or passage"),
    "pooling": (str, "marker, mean or cls"),
    "normalize": (bool, "true or false"),
    "temperature": ((int, float), "a number > 0"),
    "max_query_length": (int, "a whole number of tokens"),
    "max_passage_length": (int, "a whole number of tokens"),
    "language": (str, "the sentence splitter's language"),
    "min_words": (int, "the sentence splitter's merge threshold"),
}


def check_manifest_fields(manifest: Path, state: Dict[str, Any]) -> None:
    """Each required setting present and of its kind; the first problem names the file and the field."""
    for name, (kind, meaning) in REQUIRED_SETTINGS.items():
        if name not in state:
            raise ValueError(
                f"{manifest}: missing {name!r} ({meaning}): every setting that changes what the model computes is "
                "required, so a default never stands in for how the model was trained. Restore the file, or save "
                "the model again."
            )
        value = state[name]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"{manifest}: {name!r} must be {meaning}, got {value!r}")


def enclosing_model_settings(directory: Path) -> Optional[DCSRSettings]:
    """The settings of the model directory a tower folder sits in, read from the ``dcsr_model.json`` beside it
    when that manifest names the folder as one of its towers; None for a hub name, a tower with its own
    config (older layouts), or a folder with no model directory around it."""
    root = directory.parent
    if not directory.is_dir() or (directory / CONFIG_NAME).is_file() or not (root / MODEL_FILE).is_file():
        return None
    query, passage, settings = read_manifest(root)
    return settings if directory.resolve() in (Path(query).resolve(), Path(passage).resolve()) else None


def manifest_tower_config(directory: Path, role: str) -> Optional[EncoderConfig]:
    """A tower folder's config as its model directory's ``role`` tower (``enclosing_model_settings``)."""
    settings = enclosing_model_settings(directory)
    return None if settings is None else EncoderConfig(**settings.tower_overrides(role))


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
