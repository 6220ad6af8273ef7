"""Shared fixtures: a tiny random BERT (fast, deterministic) and a small corpus with known answers."""
import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch
from haystack.schema import Document
from transformers import AutoTokenizer, BertConfig, BertModel

from haystack_dcsr.models import EncoderConfig, resolve_model_path

MINILM = resolve_model_path("all-MiniLM-L6-v2")

CORPUS = [
    ("Paris", "Paris is the capital of France. The Eiffel Tower was completed in 1889. "
              "The city hosts the Louvre, the most visited museum."),
    ("Berlin", "Berlin is the capital of Germany. The Berlin Wall divided the city from 1961 to 1989. "
               "The Brandenburg Gate is its most famous landmark."),
    ("Banana", "Bananas are elongated, edible fruit. They grow in tropical regions such as Ecuador. "
               "Monkeys and people both like eating them."),
    ("Jupiter", "Jupiter is the largest planet in the Solar System. It is a gas giant made mostly of hydrogen. "
                "Its Great Red Spot is a storm bigger than Earth."),
    ("Penicillin", "Penicillin was discovered by Alexander Fleming in 1928. It was the first widely used antibiotic. "
                   "It kills bacteria by weakening their cell walls."),
]

QUESTIONS = [
    ("When was the Eiffel Tower completed?", "Paris"),
    ("Which wall divided Berlin?", "Berlin"),
    ("Where do bananas grow?", "Banana"),
    ("What is the largest planet in the solar system?", "Jupiter"),
    ("Who discovered penicillin?", "Penicillin"),
]


def make_tiny_bert(directory, pooling="marker", max_length=64, seed=0, normalize=False, temperature=1.0, dropout=0.1,
                   hidden_size=32):
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=30522, hidden_size=hidden_size, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, hidden_dropout_prob=dropout,
                        attention_probs_dropout_prob=dropout)
    BertModel(config).save_pretrained(directory)
    AutoTokenizer.from_pretrained(MINILM).save_pretrained(directory)
    EncoderConfig(pooling=pooling, max_length=max_length, normalize=normalize, temperature=temperature).save(directory)
    return str(directory)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory):
    """Marker pooling, 64-token windows: small enough that a few sentences already need windowing."""
    return make_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def tiny_bert_mean(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("tiny_bert_mean"), pooling="mean", normalize=True, temperature=0.05)


@pytest.fixture
def corpus():
    return [Document(content=text, meta={"title": title}) for title, text in CORPUS]


COUNTRIES = ["france", "spain", "italy", "chile", "peru", "kenya", "ghana", "nepal", "laos", "fiji", "oman", "cuba",
             "mali", "chad", "iran", "iraq", "togo", "benin", "niger", "egypt", "sudan", "yemen", "qatar", "malta"]
CITIES = ["paris", "madrid", "rome", "lima", "nairobi", "accra", "hanoi", "tokyo", "delhi", "cairo", "doha", "oslo",
          "bern", "vienna", "prague", "warsaw", "dublin", "lisbon", "athens", "sofia", "riga", "kiev", "minsk", "baku"]
FILLER = ["the weather there is often mild in spring.", "many tourists visit during the summer months.",
          "its markets sell fresh fruit every morning.", "the river floods every few years.",
          "an old railway crosses the northern hills."]


def make_records(n=24, seed=0):
    """Synthetic QA records: each passage names one country's capital among filler sentences; the
    question asks for it; hard negatives are other countries' passages."""
    import random

    from trainer.data import Passage, Record

    rng = random.Random(seed)
    passages = []
    for i in range(n):
        country, city = COUNTRIES[i % len(COUNTRIES)], CITIES[i % len(CITIES)]
        sentences = rng.sample(FILLER, 2) + [f"the capital of {country} is {city}."]
        rng.shuffle(sentences)
        passages.append(Passage(title=country, text=" ".join(s.capitalize() for s in sentences), passage_id=f"p{i}"))
    records = []
    for i, passage in enumerate(passages):
        others = [p for j, p in enumerate(passages) if j != i]
        records.append(Record(question=f"what is the capital of {COUNTRIES[i % len(COUNTRIES)]}?",
                              answers=[CITIES[i % len(CITIES)]], positives=[passage],
                              hard_negatives=rng.sample(others, 3)))
    return records
