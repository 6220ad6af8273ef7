"""The training loop: one code path for CPU, one GPU, and many GPUs or nodes under ``torchrun``
(``distributed``: ranks and gathering; ``checkpoints``: exact resume).

Every rank builds the same global batch (sampling is seeded), encodes its share of the questions
and passages, and gathers the others' vectors so every rank scores every question against every
candidate of the global batch. Gathered copies carry no gradient; each rank's own slice does, and
the loss is scaled by the world size, so after DDP averages gradients they equal those of one
process on the whole batch (tested with gloo on CPU).
"""

import contextlib
import dataclasses
import itertools
import json
import logging
import time
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import torch
from tqdm.auto import tqdm

from haystack_dcsr.core.model.dcsr_model import ModelFiles, save_towers
from haystack_dcsr.core.model.encoder import PassageTower, QueryTower, Tower, Window
from haystack_dcsr.core.model.model_settings import DCSRSettings
from haystack_dcsr.core.model.models import pick_dtype
from haystack_dcsr.training.checkpoints import Checkpoints, seed_everything
from haystack_dcsr.training.config import TrainConfig
from haystack_dcsr.training.data import Record, load_records
from haystack_dcsr.training.distributed import Distributed
from haystack_dcsr.training.grad_cache import CachedPass
from haystack_dcsr.training.losses.qp import QPLoss, positive_ranks
from haystack_dcsr.training.losses.qq import qq_loss
from haystack_dcsr.training.marker import MarkerOffset, attach_markers, learning_rate_schedule, marker_is_new
from haystack_dcsr.training.memory import peak_memory_gb
from haystack_dcsr.training.model_card import model_card
from haystack_dcsr.training.samples import Batch, Sample, SampleBuilder, batches, make_batch
from haystack_dcsr.training.schedule import epoch_batches
from haystack_dcsr.training.sentence_index import FrozenSentenceIndex, training_passages
from haystack_dcsr.training.validation import RetrievalValidation

logger = logging.getLogger(__name__)


class DualEncoder(torch.nn.Module):
    """Query and passage towers as one module, so DDP sees one forward per step."""

    def __init__(self, query: Tower, passage: Tower, markers: Optional[Dict[str, MarkerOffset]] = None):
        super().__init__()
        self.query_tower, self.passage_tower = query, passage
        self.query, self.passage = query.model, passage.model
        self.markers = torch.nn.ModuleDict(markers or {})  # the <sent> embeddings' own offsets (marker.py)

    def forward(self, query_windows: List[Window], n_queries: int, passage_windows: List[Window], n_rows: int):
        q = self.query_tower.forward(query_windows, n_queries) if query_windows else None
        p = self.passage_tower.forward(passage_windows, n_rows) if passage_windows else None
        return q, p


def build_towers(config: TrainConfig, device: torch.device) -> Tuple[QueryTower, PassageTower, float]:
    """Both towers with the config's pooling and lengths, and the HasAns temperature; normalisation and temperature
    default to the starting model's own settings (``ModelFiles``: cosine / 0.05 for sentence-transformers models,
    raw dot / 1.0 otherwise, a DCSR model's ``dcsr_model.json``)."""
    sources = tower_sources(config)

    def settings(role: str) -> DCSRSettings:
        return ModelFiles.locate(sources[role]).settings.given(
            pooling=config.resolved_pooling,
            normalize=config.normalize,
            temperature=config.temperature,
            level=config.level,
            max_query_length=config.max_query_length,
            max_passage_length=config.max_passage_length,
        )

    query_settings, passage_settings = settings("query"), settings("passage")

    def tower(kind, role, model):
        return kind(sources[role], **model.tower_overrides(role), device=str(device), precision="fp32")

    query = tower(QueryTower, "query", query_settings)
    passage = tower(PassageTower, "passage", passage_settings)
    if query_settings.temperature != passage_settings.temperature:
        # towers from two bases can default differently; the model has one temperature, and it is the one
        # the loss trains with, validation ranks with and dcsr_model.json records: the query side's, as served
        logger.warning(
            "The towers default to temperatures %s (query) and %s (passage): training with %s; set temperature "
            "to choose another",
            query_settings.temperature,
            passage_settings.temperature,
            query_settings.temperature,
        )
    return query, passage, query_settings.temperature


def tower_sources(config: TrainConfig) -> Dict[str, str]:
    """Where each tower starts: its own model if given, else the base model's (one tower, or a
    DCSRModel / trainer output to train further)."""
    base = ModelFiles.locate(config.base_model)
    return {"query": config.query_model or base.query_dir, "passage": config.passage_model or base.passage_dir}


def _with_meqs(records: List[Record]) -> List[Record]:
    """The contrast stage's records: those with an MEQ (each trains beside it, see ``train_meqs``)."""
    kept = [r for r in records if r.negative_questions]
    if not kept:
        raise ValueError(f"meq_records_only: none of the {len(records)} training records carries an MEQ")
    return kept


class Trainer:
    """Fine-tunes the towers on ``config.train_file``; see ``TrainConfig`` for the knobs."""

    def __init__(
        self, config: TrainConfig, records: Optional[List[Record]] = None, dev_records: Optional[List[Record]] = None
    ):
        self.config = config
        self.dist = Distributed(config.device)
        self.device = self.dist.device()
        seed_everything(config.seed + self.dist.rank)
        self.records = records if records is not None else self._load(config.train_file)
        if config.meq_records_only:
            self.records = _with_meqs(self.records)
        self.dev_records = (
            dev_records
            if dev_records is not None
            else (self._load(config.dev_file)[: config.dev_limit] if config.dev_file else [])
        )
        self.query, self.passage, temperature = build_towers(config, self.device)
        self.model = DualEncoder(self.query, self.passage, self._markers())
        self.ddp = self.model
        if self.dist.world > 1:
            self.ddp = torch.nn.parallel.DistributedDataParallel(
                self.model,
                device_ids=[self.dist.local_rank] if self.device.type == "cuda" else None,
                find_unused_parameters=True,
            )
        self.builder = SampleBuilder(
            level=config.level,
            negatives=config.negatives,
            exclude_adjacent=config.exclude_adjacent,
            train_meqs=config.train_meqs,
            seed=config.seed,
            meq_oversample=config.meq_oversample,
        )
        self.qp = QPLoss(temperature)  # the one temperature (build_towers)
        self.index: Optional[FrozenSentenceIndex] = None  # query-side tuning's candidates (frozen_passages)
        if config.frozen_passages:
            self.passage.model.requires_grad_(False)
            self.index = FrozenSentenceIndex(
                training_passages(self.records),
                self.builder,
                self.passage,
                config.frozen_mask_top,
                config.frozen_target,
            )
            self.index.vectors = self.index.vectors.to(self.device)
            if self.dist.main:
                logger.info("query-side tuning: %d frozen sentence vectors", len(self.index))
        self._scheduled: Optional[Tuple[int, List[List]]] = None  # the last epoch's batches, built once
        self.steps_per_epoch = len(self.epoch_batches(0)) // config.grad_accumulation
        if self.steps_per_epoch == 0:
            raise ValueError(f"{len(self.records)} training records do not fill one batch of {config.batch_size}")
        self.total_steps = config.max_steps or self.steps_per_epoch * config.epochs
        offsets = {id(p) for p in self.markers.parameters()}
        trained = [p for p in self.model.parameters() if id(p) not in offsets and p.requires_grad]
        groups = [{"params": trained}]
        if offsets:  # the marker's own group: its own rate, no weight decay
            groups.append(
                {"params": list(self.markers.parameters()), "lr": config.marker_lr or config.lr, "weight_decay": 0.0}
            )
        self.optimizer = torch.optim.AdamW(groups, lr=config.lr, weight_decay=config.weight_decay)
        self.scheduler = learning_rate_schedule(
            self.optimizer, config.warmup_steps, self.total_steps, config.marker_warmup_steps
        )
        self.amp_dtype = pick_dtype(self.device, config.precision)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp_dtype == torch.float16)
        self.output = Path(config.output_dir)
        self.checkpoints = Checkpoints(self.output, config.keep_checkpoints, self.dist)
        self.state = {"epoch": 0, "step_in_epoch": 0, "global_step": 0, "best": None}
        self.history: List[Dict] = []
        self.dev_metrics: Dict[str, float] = {}
        self._cached: Optional[CachedPass] = None
        self._writer = _tensorboard(self.output / "tensorboard", config.tensorboard) if self.dist.main else None
        self.retrieval = (
            RetrievalValidation(self.dev_records, self.builder, config.retrieval_dev_passages)
            if self.dev_records and config.retrieval_dev_passages
            else None
        )

    @property
    def markers(self) -> torch.nn.ModuleDict:
        """The towers' marker offsets (empty unless the marker has its own optimiser group)."""
        return self.model.markers

    def epoch_batches(self, epoch: int) -> List[List]:
        """The batches of ``epoch``, built once (the step count at start-up reuses epoch 0's)."""
        if self._scheduled is None or self._scheduled[0] != epoch:
            config = self.config
            built = epoch_batches(self.builder, self.records, epoch, config.batch_size, config.meq_per_batch)
            self._scheduled = (epoch, built)
        return self._scheduled[1]

    def _markers(self) -> Dict[str, MarkerOffset]:
        """``marker_init`` on new markers; an offset per tower when the marker has its own group."""
        config = self.config
        if config.resolved_pooling != "marker":
            return {}
        towers = {"query": self.query, "passage": self.passage}
        new = {}
        if config.marker_init is not None:
            sources = tower_sources(config)
            new = {name: marker_is_new(sources[name], tower.config.marker) for name, tower in towers.items()}
        offsets = config.marker_lr is not None or config.marker_warmup_steps > 0
        return attach_markers(towers, config.marker_init, offsets, new, seed=config.seed)

    def _load(self, path: str) -> List[Record]:
        report = load_records(path)
        if self.dist.main:
            logger.info(report.summary(path))
        return report.records

    # ---- one step -------------------------------------------------------------------------------

    def encode_batch(self, batch: Batch, train: bool = True, passages: bool = True):
        """Question vectors (+ q+/q- vectors) and candidate vectors of the global batch (None when
        ``passages`` is off: query-side tuning scores against its frozen index instead)."""
        rank, n_q = self.dist.rank, len(batch.questions)
        question_owner = self.dist.owners(n_q)
        mine_q = [i for i in range(n_q) if question_owner[i] == rank]
        qq = self.config.qq_form is not None and train and self.state["epoch"] >= self.config.qq_start_epoch
        texts = [batch.questions[i] for i in mine_q]
        paraphrase_of, meq_of = {}, {}
        if qq:
            for i in mine_q:
                paraphrase = batch.paraphrases[i]
                if paraphrase is None and self.config.qq_fallback_positive == "dropout" and batch.meqs[i] is not None:
                    paraphrase = batch.questions[i]  # same question, another dropout mask
                if paraphrase is not None:
                    paraphrase_of[i] = len(texts)
                    texts.append(paraphrase)
            for i in mine_q:
                if batch.meqs[i] is not None:
                    meq_of[i] = len(texts)
                    texts.append(batch.meqs[i])
        query_windows = self.query.text_windows(texts, what="Question") if texts else []

        half = self._passage_half(batch) if passages else None
        passage_windows, n_rows = (half.windows, half.n_rows) if half else ([], 0)

        if train and self.config.grad_cache_chunk:
            self._cached = CachedPass(
                self._forward,
                query_windows,
                len(texts),
                passage_windows,
                n_rows,
                self.config.grad_cache_chunk,
                self.device,
            )
            q_vectors, p_rows = self._cached.queries, self._cached.passages
        else:
            q_vectors, p_rows = self._forward(query_windows, len(texts), passage_windows, n_rows)
        dim = self.query.dim
        questions = self.dist.gather(q_vectors[: len(mine_q)] if mine_q else None, question_owner, dim, self.device)
        candidates = self._candidates(batch, half, p_rows) if half else None

        extra = None
        if qq:
            zero = torch.zeros(dim, device=self.device)
            local_pos = (
                torch.stack([q_vectors[paraphrase_of[i]] if i in paraphrase_of else zero for i in mine_q])
                if mine_q
                else None
            )
            local_neg = torch.stack([q_vectors[meq_of[i]] if i in meq_of else zero for i in mine_q]) if mine_q else None
            flags = torch.tensor(
                [[i in paraphrase_of, i in meq_of] for i in mine_q], dtype=torch.float, device=self.device
            ).view(-1, 2)
            q_pos = self.dist.gather(local_pos, question_owner, dim, self.device)
            q_neg = self.dist.gather(local_neg, question_owner, dim, self.device)
            has = self.dist.gather(flags, question_owner, 2, self.device).detach().bool()
            extra = (q_pos, q_neg, has[:, 0], has[:, 1])
        return questions, candidates, extra

    def _passage_half(self, batch: Batch) -> "_PassageHalf":
        """This rank's passages as the serving path windows them: each passage's sentences, or the
        passage whole (DPR), and the first row of each in the encoded rows."""
        owner = self.dist.owners(len(batch.passages))
        mine = [i for i in range(len(batch.passages)) if owner[i] == self.dist.rank]
        units = [self.builder.units(batch.passages[i], self.config.level) for i in mine]
        windows, n_rows = self.passage.windows(units)
        first_row = dict(zip(mine, itertools.accumulate((len(u) for u in units), initial=0)))
        return _PassageHalf(owner, windows, n_rows, first_row)

    def _candidates(self, batch: Batch, half: "_PassageHalf", p_rows: torch.Tensor) -> torch.Tensor:
        """The batch's candidate vectors, gathered from the ranks that encoded their passages."""
        candidate_owner = [half.owner[p] for p, _ in batch.candidates]
        mine = [c for c, owner in enumerate(candidate_owner) if owner == self.dist.rank]
        local = None
        if mine:
            index = [half.first_row[p] + (s or 0) for p, s in (batch.candidates[c] for c in mine)]
            local = p_rows[torch.tensor(index, device=p_rows.device)]
        return self.dist.gather(local, candidate_owner, self.query.dim, self.device)

    def _forward(self, query_windows: List[Window], n_queries: int, passage_windows: List[Window], n_rows: int):
        with torch.autocast(self.device.type, dtype=self.amp_dtype, enabled=self.amp_dtype != torch.float32):
            return self.ddp(query_windows, n_queries, passage_windows, n_rows)

    def loss(self, batch: Batch, samples: Sequence[Sample] = ()) -> Tuple[torch.Tensor, Dict[str, float]]:
        """QP (+ lambda QQ) of one micro-batch; with a frozen index, ``samples`` name each question's targets."""
        if self.index is not None:
            questions, _, extra = self.encode_batch(batch, passages=False)
            logits = self.qp.logits(questions, self.index.vectors)  # one pass over all rows serves both
            positives, mask = self.index.targets(samples, logits.detach())
            loss = self.qp.marginal(logits, positives, mask)
        else:
            questions, candidates, extra = self.encode_batch(batch)
            loss = self.qp(questions, candidates, batch.positives.to(self.device), batch.mask)
        parts = {"qp": float(loss.detach()), "meq_questions": float(sum(m is not None for m in batch.meqs))}
        if extra is not None:
            q_pos, q_neg, has_pos, has_neg = extra
            qq = qq_loss(
                self.config.qq_form,
                questions,
                q_pos,
                q_neg,
                has_pos,
                has_neg,
                margin=self.config.qq_margin,
                temperature=self.qp.temperature,
            )
            loss = loss + self.config.qq_weight * qq
            parts["qq"] = float(qq.detach())
        parts["loss"] = float(loss.detach())
        return loss, parts

    # ---- the loop -------------------------------------------------------------------------------

    def train(self, resume: bool = True) -> List[Dict]:
        if resume and self.checkpoints.all():
            self.checkpoints.check_same_run(self.config.to_yaml())
            self.load_checkpoint()
        elif self.dist.main:  # a fresh run: its own config and log (a run killed before a checkpoint left one)
            self.output.mkdir(parents=True, exist_ok=True)
            (self.output / "config.yaml").write_text(self.config.to_yaml())
            (self.output / "log.jsonl").unlink(missing_ok=True)
        accumulation = self.config.grad_accumulation
        bar = tqdm(
            total=self.total_steps,
            initial=self.state["global_step"],
            disable=not self.dist.main,
            desc="Training",
            unit=" steps",
        )
        while self.state["global_step"] < self.total_steps:
            epoch = self.state["epoch"]
            scheduled = self.epoch_batches(epoch)
            steps = len(scheduled) // accumulation
            while self.state["step_in_epoch"] < steps and self.state["global_step"] < self.total_steps:
                start = self.state["step_in_epoch"] * accumulation
                started = time.perf_counter()
                parts = self.step(scheduled[start : start + accumulation])
                step_s = time.perf_counter() - started  # GPU: up to the loss's sync (a mean over steps is right)
                self.state["step_in_epoch"] += 1
                self.state["global_step"] += 1
                bar.update(1)
                record = {
                    "step": self.state["global_step"],
                    "epoch": epoch,
                    "lr": self.scheduler.get_last_lr()[0],
                    **parts,
                    "peak_memory_gb": round(peak_memory_gb(self.device), 3),  # GPU: torch's; CPU: the process's
                    "step_s": round(step_s, 4),  # what sizes a run to a time budget (gpu_train.py's budget_s)
                }
                self.history.append(record)
                self._log(record)
                every = self.config.validate_every
                if every and self.state["global_step"] % every == 0 and self.state["step_in_epoch"] < steps:
                    self.validate_and_keep_best()
                if self.config.checkpoint_every and self.state["global_step"] % self.config.checkpoint_every == 0:
                    self.save_checkpoint()
            if self.state["step_in_epoch"] >= steps:
                self.end_epoch()
        bar.close()
        if self.state["step_in_epoch"] > 0:  # stopped mid-epoch (max_steps): the end is validated too
            self.validate_and_keep_best()
        self.save_encoders(self.output / "last")
        self.save_checkpoint()
        return self.history

    def step(self, micro_batches: Sequence[List]) -> Dict[str, float]:
        self.model.train()
        totals: Dict[str, float] = {}
        for k, samples in enumerate(micro_batches):
            batch = make_batch(samples, self.config.mask_false_negatives)
            sync = k == len(micro_batches) - 1 or self.dist.world == 1
            context = self.ddp.no_sync() if not sync else contextlib.nullcontext()
            with context:
                loss, parts = self.loss(batch, samples)
                scaled = loss * self.dist.world / len(micro_batches)
                self.scaler.scale(scaled).backward()
            if self._cached is not None:  # gradient cache: push the vectors' gradients through the towers
                self._cached.replay(self.ddp.no_sync if self.dist.world > 1 else contextlib.nullcontext, sync)
                self._cached = None
            for key, value in parts.items():
                totals[key] = totals.get(key, 0.0) + value / len(micro_batches)
        self.scaler.unscale_(self.optimizer)
        if self.config.max_grad_norm:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.max_grad_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return totals

    def end_epoch(self):
        self.validate_and_keep_best(epoch=self.state["epoch"])
        self.state["epoch"] += 1
        self.state["step_in_epoch"] = 0

    def validate_and_keep_best(self, **extra) -> Dict[str, float]:
        """In-batch and retrieval validation, logged; ``best/`` is re-chosen at every validation (each
        epoch, every ``validate_every`` steps, and the end of a run that stops mid-epoch)."""
        if not self.dev_records:
            return {}
        metrics = self.validate()
        if self.retrieval is not None and self.dist.main:
            self.model.eval()
            metrics.update(self.retrieval(self.query, self.passage, self.qp.temperature))
            self.model.train()
        self.dev_metrics = metrics
        if not (self.dist.main and metrics):
            return metrics
        self._log({"step": self.state["global_step"], **extra, **{f"dev_{k}": v for k, v in metrics.items()}})
        name = self.config.best_metric if self.config.best_metric in metrics else "average_rank"
        value = metrics[name] if name == "average_rank" else -metrics[name]  # lower is better
        best = self.state["best"]
        if best is None or self.state.get("best_metric", "average_rank") != name or value < best:
            self.state["best"], self.state["best_metric"] = value, name
            self.save_encoders(self.output / "best")
            logger.info("best/ <- step %d (%s %.4f)", self.state["global_step"], name, metrics[name])
        return metrics

    @torch.no_grad()
    def validate(self) -> Dict[str, float]:
        """In-batch rank of the positive on the dev set: accuracy (rank 1) and average rank."""
        self.model.eval()
        builder = self.builder.for_validation()
        ranks = []
        for samples in batches(builder.epoch(self.dev_records, 0), self.config.dev_batch_size, drop_last=False):
            batch = make_batch(samples, self.config.mask_false_negatives)
            questions, candidates, _ = self.encode_batch(batch, train=False)
            ranks.extend(positive_ranks(questions, candidates, batch.positives, batch.mask).tolist())
        self.model.train()
        if not ranks:
            return {}
        return {
            "accuracy": sum(r == 1 for r in ranks) / len(ranks),
            "average_rank": float(np.mean(ranks)),
            "questions": len(ranks),
        }

    # ---- persistence ----------------------------------------------------------------------------

    def save_encoders(self, directory: Path) -> None:
        """A DCSRModel directory: both HF tower directories and ``dcsr_model.json``, their one config."""
        if not self.dist.main:
            return
        settings = dataclasses.replace(
            DCSRSettings.from_towers(self.query.config, self.passage.config, self.qp.temperature),
            max_query_length=self.query.config.max_length,
        )
        with contextlib.ExitStack() as folded:  # trained marker offsets go into the saved embedding rows
            for offset in self.markers.values():
                folded.enter_context(offset.folded())
            save_towers(directory, settings, self.query, self.passage)
        in_batch = ("accuracy", "average_rank", "questions")
        metrics = {
            f"dev {'in-batch ' if k in in_batch else ''}{k}": round(v, 4) if isinstance(v, float) else v
            for k, v in self.dev_metrics.items()
        }
        if self.history:
            metrics["training steps"] = self.history[-1]["step"]
            metrics["loss, mean of the last 10 steps"] = round(
                float(np.mean([h["loss"] for h in self.history[-10:]])), 4
            )
        recipe = {
            k: v
            for k, v in dataclasses.asdict(self.config).items()
            if v is not None and k not in ("output_dir", "train_file", "dev_file", "device")
        }
        model_card(
            directory,
            title=f"DCSR: {self.output.name}",
            base_model=self.config.base_model,
            recipe=recipe,
            metrics=metrics,
            data=f"`{Path(self.config.train_file).name}`" if self.config.train_file else "given records",
        )

    def save_checkpoint(self) -> None:
        """Weights, optimiser, scheduler, RNG and progress, for an exact resume (``Checkpoints.save``)."""
        if self.dist.main:
            log = self.output / "log.jsonl"
            self.state["log_bytes"] = log.stat().st_size if log.is_file() else 0  # what a resume keeps of the log
        self.checkpoints.save(
            self.state["global_step"],
            lambda: {
                "query": self.query.model.state_dict(),
                "passage": self.passage.model.state_dict(),
                "markers": self.markers.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "scaler": self.scaler.state_dict(),
                "state": self.state,
                "history": self.history,
            },
        )

    def load_checkpoint(self) -> None:
        def restore(state: Dict) -> None:
            self.query.model.load_state_dict(state["query"])
            self.passage.model.load_state_dict(state["passage"])
            self.markers.load_state_dict(state.get("markers", {}))
            self.optimizer.load_state_dict(state["optimizer"])
            self.scheduler.load_state_dict(state["scheduler"])
            self.scaler.load_state_dict(state["scaler"])
            self.state, self.history = state["state"], state["history"]

        directory = self.checkpoints.load(self.device, restore)
        if self.dist.main:
            self.checkpoints.rewind_log(self.output / "log.jsonl", self.state.get("log_bytes"))
            logger.info("Resumed from %s at step %d", directory, self.state["global_step"])

    def _log(self, record: Dict) -> None:
        if not self.dist.main:
            return
        self.output.mkdir(parents=True, exist_ok=True)
        with (self.output / "log.jsonl").open("a") as handle:
            handle.write(json.dumps(record) + "\n")
        if self._writer is not None:
            for key, value in record.items():
                if isinstance(value, (int, float)) and key != "step":
                    self._writer.add_scalar(key, value, record["step"])
        if self.config.log_every and record["step"] % self.config.log_every == 0:
            logger.info(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in record.items()))


class _PassageHalf(NamedTuple):
    owner: List[int]  # the rank that encodes each passage of the batch
    windows: List[Window]
    n_rows: int
    first_row: Dict[int, int]  # this rank's passages: their first row among the encoded rows


def _tensorboard(directory: Path, wanted: Optional[bool]):
    """A SummaryWriter: always when ``wanted``, when installed for None (as HF's ``report_to="all"``)."""
    if wanted is False:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter

        return SummaryWriter(str(directory))
    except ImportError:
        if wanted:
            logger.warning(
                "tensorboard: true, but TensorBoard is not installed: logging to log.jsonl only. "
                'Install it with pip install "haystack-dcsr[tensorboard]".'
            )
        return None
