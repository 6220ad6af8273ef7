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

SNAPSHOT_PATTERNS = ["*.json", "*.txt", "*.model", "tokenizer*", "*.safetensors", "*/config.json", "README.md"]


def snapshot(repo_id: str, revision: Optional[str] = None) -> str:
    """The local directory of a hub model: the cached snapshot, downloaded first when online.
    Only configs, tokenizer files and safetensors weights are fetched (``pytorch_model.bin`` only
    when a repository has no safetensors)."""
    from huggingface_hub import snapshot_download

    directory = Path(snapshot_download(repo_id, revision=revision, allow_patterns=SNAPSHOT_PATTERNS))
    if not any(directory.glob("*.safetensors")):
        directory = Path(snapshot_download(repo_id, revision=revision, allow_patterns=["pytorch_model.bin"]))
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
        modules.append({"idx": 1, "name": "1", "path": "1_DCSR", "type": "haystack_dcsr.hub.NotSentenceTransformers"})
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
            "sentence-transformers cannot reproduce. Load it with haystack_dcsr (QueryEncoder, DCSRRetriever)."
        )


def model_card(directory: Union[str, Path], title: str, base_model: str, recipe: Dict, metrics: Dict, data: str) -> str:
    """A Hugging Face model card (README.md with front matter): base, data, recipe, metrics, usage."""
    directory = Path(directory)
    rows = "\n".join(f"| {key} | {value} |" for key, value in metrics.items()) or "| (none recorded) | |"
    settings = "\n".join(f"| `{key}` | {json.dumps(value)} |" for key, value in recipe.items())
    text = f"""---
library_name: haystack-dcsr
base_model: {base_model}
tags: [dcsr, dense-retrieval, sentence-retrieval, haystack]
---

# {title}

Dense Contextual Sentence Representation (DCSR) towers trained with
[haystack-dcsr](https://github.com/) from `{base_model}`: passages are encoded whole, one vector per
sentence, and ranked by HasAns.

- Training data: {data}
- Load: `DCSRRetriever(query_model="<this repo>/query_encoder", passage_model="<this repo>/passage_encoder")`
  (or the repository of each tower); the towers' `dcsr_encoder.json` sets pooling, normalisation and temperature.

## Metrics (at the end of training)

| metric | value |
|---|---|
{rows}

## Recipe

| setting | value |
|---|---|
{settings}
"""
    (directory / "README.md").write_text(text)
    return text


def publish(
    directory: Union[str, Path],
    repo_id: str,
    private: bool = False,
    token: Optional[str] = None,
    commit_message: str = "Upload DCSR model",
) -> str:
    """Upload a trained model directory (towers and model card) to the Hugging Face hub; returns its URL."""
    from huggingface_hub import HfApi

    directory = Path(directory)
    if not any(directory.rglob("dcsr_encoder.json")):
        raise ValueError(
            f"{directory} holds no DCSR tower (no dcsr_encoder.json): give a trainer output such as "
            "runs/<name>/best, or a tower directory"
        )
    api = HfApi(token=token)
    api.create_repo(repo_id, private=private, exist_ok=True)
    api.upload_folder(folder_path=str(directory), repo_id=repo_id, commit_message=commit_message)
    return f"https://huggingface.co/{repo_id}"
