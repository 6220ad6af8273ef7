"""Fine-tune a cross-encoder reranker on the trainer's records, with MEQ golds as contrast negatives.

Why: after every bi-encoder lever of issue #15, q' still ranks its own gold above q's gold in at
most ~83% of contrast pairs. A cross-encoder reads the edited word against each passage. Each
training group is a question, its positive and ``negatives`` passages, scored listwise (softmax
cross-entropy over the group, as Tevatron's reranker and sentence-transformers'
``CrossEncoder`` with several negatives train): the first negative of a question with an MEQ is
that MEQ's gold passage (the contrast the goals measure), the MEQ itself is a group with q's gold
as its first negative, and BM25 negatives fill the rest. Negatives holding the group's answer are
dropped (DPR's rule, ``answerless_negatives``).

Batches mix ``meq_share`` of MEQ-bearing groups with the other questions, which pass once per
epoch. The output is a plain Hugging Face sequence-classification directory (``last/``) that
``haystack_dcsr.core.model.cross_encoder.CrossEncoder`` and Haystack's ``SentenceTransformersRanker`` load.
"""

import itertools
import json
import logging
import random
import time
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Sequence

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

from haystack_dcsr.core.model.models import pick_device, resolve_model_path
from haystack_dcsr.training.config import CrossEncoderConfig
from haystack_dcsr.training.data import DataError, Record, answerless_negatives, load_records
from haystack_dcsr.training.memory import peak_memory_gb

logger = logging.getLogger(__name__)
HEAD_PREFIXES = ("classifier", "bert.pooler", "roberta.pooler", "pooler")  # a sequence classifier's new head


class Group(NamedTuple):
    question: str
    positive: str
    negatives: List[str]


def record_groups(records: Sequence[Record], negatives: int, rng: random.Random):
    """(plain groups, MEQ groups) of one pass over ``records``; a group without any negative is skipped."""
    plain: List[Group] = []
    meq: List[Group] = []
    seen: Dict[str, str] = {}
    for record in records:
        if not record.positives:
            continue
        contrast = [m.positives[0] for m in record.negative_questions if m.positives]
        rng.shuffle(contrast)
        bm25 = rng.sample(record.hard_negatives, len(record.hard_negatives))
        picked = answerless_negatives(record, contrast[:1] + bm25, negatives, seen)
        if picked:
            (meq if contrast else plain).append(
                Group(record.question, record.positives[0].text, [p.text for p in picked])
            )
        for edited in record.negative_questions:
            if not edited.positives:
                continue
            pool = [record.positives[0]] + rng.sample(record.hard_negatives, len(record.hard_negatives))
            picked = answerless_negatives(edited, pool, negatives, seen)
            if picked:
                meq.append(Group(edited.question, edited.positives[0].text, [p.text for p in picked]))
    return plain, meq


def batches(records: Sequence[Record], config: CrossEncoderConfig) -> Iterator[List[Group]]:
    """Endless batches: fresh groups (new negatives) every pass over the plain questions, MEQ groups
    drawn from a reshuffled pool as needed."""
    rng = random.Random(config.seed)
    n_meq = round(config.questions_per_batch * config.meq_share)
    n_plain = config.questions_per_batch - n_meq
    pool: List[Group] = []
    while True:
        plain, meq = record_groups(records, config.negatives, rng)
        if (n_meq and not meq) or (n_plain and len(plain) < n_plain):
            need = (
                "MEQ groups (build-meq-augmentation adds negative_questions)" if n_meq and not meq else "plain groups"
            )
            fix = (
                "set meq_share=0 (--set meq_share=0) to train on plain questions alone, or add MEQs with "
                "build-meq-augmentation"
                if n_meq and not meq
                else "lower meq_share or questions_per_batch"
            )
            raise DataError(f"{config.train_file}: no {need} for meq_share={config.meq_share}: {fix}")
        rng.shuffle(plain)
        for number in range(len(plain) // n_plain if n_plain else max(len(meq) // n_meq, 1)):
            while len(pool) < n_meq:
                pool.extend(rng.sample(meq, len(meq)))
            yield plain[number * n_plain : (number + 1) * n_plain] + [pool.pop() for _ in range(n_meq)]


def group_loss(model, tokenizer, groups: Sequence[Group], config: CrossEncoderConfig, device) -> torch.Tensor:
    """Listwise loss: each group's positive against its negatives (softmax cross-entropy)."""
    pairs = [(g.question, p) for g in groups for p in [g.positive, *g.negatives]]
    order = np.argsort([len(q) + len(p) for q, p in pairs], kind="stable")
    parts = []
    for start in range(0, len(pairs), config.chunk):
        chunk = order[start : start + config.chunk]
        batch = tokenizer(
            [pairs[i][0] for i in chunk],
            [pairs[i][1] for i in chunk],
            truncation="only_second",
            max_length=config.max_length,
            padding=True,
            return_tensors="pt",
        ).to(device)
        parts.append(model(**batch).logits[:, 0])
    logits = torch.cat(parts)[torch.as_tensor(np.argsort(order), device=device)]  # back to the pairs' order
    losses, offset = [], 0
    for group in groups:
        size = 1 + len(group.negatives)
        losses.append(-torch.log_softmax(logits[offset : offset + size], dim=0)[0])
        offset += size
    return torch.stack(losses).mean()


def parameter_groups(model, config: CrossEncoderConfig) -> List[Dict]:
    """The randomly initialised head at ``head_lr``, the pretrained encoder at ``lr``: at one rate, a
    MiniLM start sat at chance loss (ln 4) for the first 40 SQuAD steps; with the head at 1e-3 the
    loss was 0.97 by then (a 40-step probe on the MEQ training file, seed 0)."""
    head = {name for name, _ in model.named_parameters() if name.startswith(HEAD_PREFIXES)}
    if not head:
        raise ValueError(f"{type(model).__name__}: no parameters named {HEAD_PREFIXES}")
    return [
        {"params": [p for n, p in model.named_parameters() if n in head], "lr": config.head_lr},
        {"params": [p for n, p in model.named_parameters() if n not in head], "lr": config.lr},
    ]


def train_cross_encoder(config: CrossEncoderConfig, device: str = None) -> Path:
    """Train, log to ``output_dir/log.jsonl``, write ``output_dir/last/``; returns that directory. Bad data
    (a missing file, no MEQ groups for ``meq_share``) fails before ``output_dir`` is touched."""
    random.seed(config.seed)
    torch.manual_seed(config.seed)
    records = load_records(config.train_file).records
    where = pick_device(device)
    path = resolve_model_path(config.model)
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
    tokenizer.model_max_length = config.max_length  # saved with it: Haystack's ranker truncates there too
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1, trust_remote_code=False).to(where)
    model.train()
    optimizer = torch.optim.AdamW(parameter_groups(model, config))
    schedule = get_linear_schedule_with_warmup(optimizer, int(config.warmup_ratio * config.max_steps), config.max_steps)
    stream = batches(records, config)
    stream = itertools.chain([next(stream)], stream)  # data errors surface before anything is written
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cross_encoder_config.yaml").write_text(config.to_yaml())
    window, started = [], time.perf_counter()
    with (out / "log.jsonl").open("w") as log:
        for step in range(1, config.max_steps + 1):
            loss = group_loss(model, tokenizer, next(stream), config, where)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            window.append(loss.item())
            if step % config.log_every == 0 or step == config.max_steps:
                row = {
                    "step": step,
                    "loss": float(np.mean(window)),
                    "lr": schedule.get_last_lr()[1],
                    "elapsed_s": round(time.perf_counter() - started, 1),
                    "peak_memory_gb": round(peak_memory_gb(where), 2),
                }
                log.write(json.dumps(row) + "\n")
                log.flush()
                logger.info("%s", row)
                window = []
            if step % config.save_every == 0 or step == config.max_steps:
                model.save_pretrained(out / "last")
                tokenizer.save_pretrained(out / "last")
    return out / "last"
