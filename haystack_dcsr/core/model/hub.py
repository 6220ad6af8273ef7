"""Models that travel: hub names read like local folders, sentence-transformers files, model cards.

A tower directory's own settings (``dcsr_encoder.json``, or sentence-transformers' ``modules.json``
and pooling config) decide how it pools, normalises and scales scores, so a hub name must be read
the same way as a folder: it is resolved to its local snapshot (downloaded when online, taken from
the Hugging Face cache when offline) before anything is loaded.

Saved towers also carry sentence-transformers' files, so ``SentenceTransformer(directory)`` gives
the same vectors where it can: mean- or [CLS]-pooled towers that read one text per vector (query
towers, passage-level towers). Towers it cannot reproduce -- pooling at DCSR's ``<sent>`` marker,
or one vector per sentence of a passage read whole -- get a module that refuses with a message
saying so, instead of silently falling back to mean pooling.
"""

import json
from pathlib import Path
from typing import Dict, List, Optional, Union

from haystack_dcsr.core.storage.atomic_files import atomic_write_text

# what modules.json names: the package's top-level module, which stays where it is whatever room the core moves to
STABLE_REFUSAL_PATH = "haystack_dcsr.hub.NotSentenceTransformers"
SNAPSHOT_PATTERNS = ["*.json", "*.txt", "*.model", "tokenizer*", "*.safetensors", "*/config.json", "README.md"]


def snapshot(repo_id: str, revision: Optional[str] = None, token: Optional[Union[str, bool]] = None) -> str:
    """The local directory of a hub model: the cached snapshot, downloaded first when online.
    Only configs, tokenizer files and safetensors weights are fetched (``pytorch_model.bin`` only
    when a repository has no safetensors)."""
    from huggingface_hub import snapshot_download

    directory = Path(snapshot_download(repo_id, revision=revision, allow_patterns=SNAPSHOT_PATTERNS, token=token))
    if not any(directory.glob("*.safetensors")):
        directory = Path(
            snapshot_download(repo_id, revision=revision, allow_patterns=["pytorch_model.bin"], token=token)
        )
    return str(directory)


def write_sentence_transformers_files(
    directory: Union[str, Path], pooling: str, normalize: bool, max_length: int, dim: int, level: str, role: str
) -> None:
    """``modules.json`` and the module configs sentence-transformers reads (see the module docstring)."""
    directory = Path(directory)
    modules: List[Dict] = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}]
    reproducible = pooling in ("mean", "cls") and (role == "query" or level == "passage")
    if reproducible:
        (directory / "1_Pooling").mkdir(exist_ok=True)
        (directory / "1_Pooling" / "config.json").write_text(
            json.dumps(
                {
                    "word_embedding_dimension": dim,
                    "pooling_mode_cls_token": pooling == "cls",
                    "pooling_mode_mean_tokens": pooling == "mean",
                    "pooling_mode_max_tokens": False,
                    "pooling_mode_mean_sqrt_len_tokens": False,
                    "include_prompt": True,
                },
                indent=1,
            )
        )
        modules.append({"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"})
        if normalize:
            modules.append(
                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
            )
            (directory / "2_Normalize").mkdir(exist_ok=True)
    else:
        (directory / "1_DCSR").mkdir(exist_ok=True)
        (directory / "1_DCSR" / "config.json").write_text(
            json.dumps({"pooling": pooling, "level": level, "role": role})
        )
        modules.append({"idx": 1, "name": "1", "path": "1_DCSR", "type": STABLE_REFUSAL_PATH})
    (directory / "modules.json").write_text(json.dumps(modules, indent=1))
    (directory / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": max_length, "do_lower_case": False})
    )


class NotSentenceTransformers:
    """A sentence-transformers module that refuses to load: this DCSR tower's vectors cannot be
    computed by sentence-transformers."""

    @classmethod
    def load(cls, path: str, *args, subfolder: str = "", **kwargs):
        # sentence-transformers 5 passes the model directory and the module's subfolder; older ones its folder
        config = json.loads((Path(path) / subfolder / "config.json").read_text())
        what = (
            "it pools at DCSR's <sent> marker"
            if config["pooling"] == "marker"
            else "it gives one vector per sentence of a passage read whole"
        )
        raise ValueError(
            f"This DCSR {config['role']} tower cannot be loaded by sentence-transformers: {what}, which "
            "sentence-transformers cannot reproduce. Load it with haystack_dcsr's retrievers (Haystack 1.x or 2.x)."
        )


LOAD_NAME = "path/to/this/directory"  # publish() writes the hub id in its place


# What a model directory is made of; anything else (checkpoint state, logs, .env, other runs) stays home
MODEL_FILE_PATTERNS = (
    "*.json",
    "*.txt",
    "*.model",
    "*.safetensors",
    "README.md",
    "*/*.json",
    "*/*.txt",
    "*/*.model",
    "*/*.safetensors",
    "*/*/config.json",
)
RUN_FOLDER_MARKERS = ("best", "last", "checkpoint", "trainer_state.pt", "log.jsonl", "config.yaml")


def model_files(directory: Union[str, Path]) -> List[str]:
    """The files of a model directory that ``publish`` uploads (paths relative to it, sorted).

    Refuses a folder that is not one model: a trainer run folder (``best/``, ``last/``, checkpoint
    state, logs) or a folder without a DCSR tower."""
    directory = Path(directory)
    if not directory.is_dir():
        raise PublishError(f"{directory} is not a directory")
    found = [name for name in RUN_FOLDER_MARKERS if (directory / name).exists()]
    found += sorted(path.name for path in directory.glob("checkpoint-*"))[:1]
    if found:
        raise PublishError(
            f"{directory} is a training run folder (it holds {', '.join(found)}), not a model directory: publish "
            f"one model, e.g. {directory / 'best'}"
        )
    if not (directory / "dcsr_model.json").is_file() and not (directory / "dcsr_encoder.json").is_file():
        raise PublishError(
            f"{directory} holds no DCSR model (no dcsr_model.json or dcsr_encoder.json): give a model directory "
            "such as runs/<name>/best"
        )
    chosen = set()
    for pattern in MODEL_FILE_PATTERNS:
        for path in directory.glob(pattern):
            relative = path.relative_to(directory)
            if path.is_file() and not path.is_symlink() and not any(p.startswith(".") for p in relative.parts):
                chosen.add(relative.as_posix())
    return sorted(chosen)


def publish(
    directory: Union[str, Path],
    repo_id: str,
    private: bool = False,
    token: Optional[str] = None,
    commit_message: str = "Upload DCSR model",
    dry_run: bool = False,
) -> Union[str, List[str]]:
    """Upload a model directory's model files (``model_files``) to the Hugging Face hub; returns its
    URL, or with ``dry_run`` the list of files that would be uploaded (nothing is sent)."""
    files = model_files(directory)
    if dry_run:
        return files
    card = Path(directory) / "README.md"
    if card.is_file() and LOAD_NAME in card.read_text():  # the card's load line names where it now lives
        atomic_write_text(card, card.read_text().replace(LOAD_NAME, repo_id))
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, private=private, exist_ok=True)
        api.upload_folder(
            folder_path=str(directory), repo_id=repo_id, commit_message=commit_message, allow_patterns=files
        )
    except (OSError, ConnectionError) as error:  # requests' errors are OSErrors
        raise PublishError(f"could not upload to the hub as {repo_id!r}: {type(error).__name__}: {error}") from None
    return f"https://huggingface.co/{repo_id}"


class PublishError(ValueError):
    """Not a model directory, or the hub could not be reached or refused the upload (one line, for the
    command line)."""
