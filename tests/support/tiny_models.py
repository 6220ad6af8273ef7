"""Tiny random BERTs for tests, framework-free: both the Haystack 1.x and 2.x suites build them."""

import dataclasses
import json
from pathlib import Path

import torch
from transformers import AutoTokenizer, BertConfig, BertModel

from haystack_dcsr.core.model.models import CONFIG_NAME, EncoderConfig, resolve_model_path

MINILM = resolve_model_path("all-MiniLM-L6-v2")


def tiny_config(hidden_size=32, dropout=0.1, **extra) -> BertConfig:
    """Two layers over MiniLM's vocabulary: fast enough for every test, real enough to tokenise text."""
    return BertConfig(
        vocab_size=30522,
        hidden_size=hidden_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        **extra,
    )


def make_tiny_bert(
    directory, pooling="marker", max_length=64, seed=0, normalize=False, temperature=1.0, dropout=0.1, hidden_size=32
):
    torch.manual_seed(seed)
    BertModel(tiny_config(hidden_size, dropout)).save_pretrained(directory)
    AutoTokenizer.from_pretrained(MINILM).save_pretrained(directory)
    own = EncoderConfig(pooling=pooling, max_length=max_length, normalize=normalize)
    # a tower saved alone, as older saves wrote it: its HasAns temperature beside its settings (legacy_temperature)
    (Path(directory) / CONFIG_NAME).write_text(json.dumps({**dataclasses.asdict(own), "temperature": temperature}))
    return str(directory)


def make_tiny_cross_encoder(directory, seed=0, hidden_size=32, **config):
    """A random one-logit BERT sequence classifier: what ``train-cross-encoder`` writes, untrained
    (``config``: more BertConfig fields, e.g. a larger ``initializer_range`` for logits that vary)."""
    from transformers import BertForSequenceClassification

    torch.manual_seed(seed)
    BertForSequenceClassification(tiny_config(hidden_size, num_labels=1, **config)).save_pretrained(directory)
    AutoTokenizer.from_pretrained(MINILM).save_pretrained(directory)
    return str(directory)
