"""The model card a trained run writes beside its model directory (``README.md``): what the towers are, how to load
them in Haystack 1.x and 2.x, the run's metrics and recipe. ``core.model.hub.publish`` puts the hub id in the load
line."""

import html
import json
from pathlib import Path
from typing import Dict, Union

from haystack_dcsr.core.model.hub import LOAD_NAME


def model_card(
    directory: Union[str, Path],
    title: str,
    base_model: str,
    recipe: Dict,
    metrics: Dict,
    data: str,
    license: str = "apache-2.0",
) -> str:
    """A Hugging Face model card (README.md with front matter): base, data, recipe, metrics, usage.

    Every value that comes from a config or a path is escaped where it lands: front-matter values
    are JSON strings (valid YAML, so a newline cannot add keys), body text is HTML- and
    Markdown-escaped on one line. ``license`` is the hub's licence id: a fine-tuned model carries its
    base model's (all-MiniLM-L6-v2 and all-mpnet-base-v2: Apache-2.0)."""
    directory = Path(directory)
    rows = "\n".join(f"| {_cell(key)} | {_cell(value)} |" for key, value in metrics.items()) or "| (none recorded) | |"
    settings = "\n".join(f"| `{_cell(key)}` | {_cell(json.dumps(value))} |" for key, value in recipe.items())
    text = f"""---
library_name: haystack-dcsr
base_model: {json.dumps(str(base_model))}
license: {json.dumps(str(license))}
tags: [dcsr, dense-retrieval, sentence-retrieval, haystack]
---

# {_cell(title)}

Dense Contextual Sentence Representation (DCSR) towers trained with haystack-dcsr from
`{_cell(base_model)}`: passages are encoded whole, one vector per sentence, and ranked by HasAns.

- Training data: {_cell(data)}
- Load: `DCSRRetriever(document_store=store, model="{LOAD_NAME}")` (Haystack 1.x: `from haystack_dcsr import
  DCSRRetriever`; 2.x: `from haystack_dcsr.haystack2 import DCSRRetriever`); `dcsr_model.json` sets pooling,
  normalisation, temperature and the sentence splitter.

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


def _cell(value) -> str:
    """One line of Markdown text that renders as the value, never as HTML or table structure."""
    text = html.escape(" ".join(str(value).split()), quote=False)
    return text.replace("|", "\\|").replace("`", "'")
