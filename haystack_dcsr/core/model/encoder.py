"""Transformer towers that turn token windows into pooled vectors.

Both towers reduce to one operation: run the model over *windows* (token sequences of at most
``max_length``) and pool chosen token *segments* of each window into output rows. DCSR's marker
pooling, mean pooling over a sentence's tokens, and [CLS]/marker query pooling are all segments,
so one differentiable routine (``Tower.forward``) serves inference and the trainer alike.
"""

import dataclasses
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from haystack_dcsr.core.model.int8 import Quantize, default_device, quantized, warm_up
from haystack_dcsr.core.model.model_settings import manifest_tower_config
from haystack_dcsr.core.model.models import (
    DEFAULT_MODEL,
    Level,
    Pooling,
    Precision,
    load_tower,
    pick_device,
    pick_dtype,
    save_tower,
)


@dataclasses.dataclass
class Window:
    """One forward pass: token ids and the (output row, start, end) token segments pooled from it."""

    input_ids: List[int]
    segments: List[Tuple[int, int, int]]


class Tower:
    """A transformer with a pooling rule: the shared core of the query and passage encoders.

    :param model_name_or_path: HF model directory or hub name (all-MiniLM-L6-v2 loads offline).
    :param pooling / normalize / max_length / level: override the directory's
        ``dcsr_encoder.json`` (see ``EncoderConfig``); None keeps it.
    :param device: torch device; None picks CUDA when available and ``use_gpu``.
    :param precision: ``auto`` (fp32 on CPU, bf16/fp16 on GPU), ``fp32``, ``fp16`` or ``bf16``.
    :param quantize: ``"int8"``: inference (``encode_*``) runs an int8 copy of the model, compiled at the
        first batch (CPU only: the device defaults to it; ``haystack_dcsr/core/model/int8.py``). The fp32 model stays
        what ``forward``, the trainer and ``save`` use, so a quantised tower saves the weights it loaded.
    """

    def __init__(
        self,
        model_name_or_path: str = DEFAULT_MODEL,
        pooling: Optional[Pooling] = None,
        normalize: Optional[bool] = None,
        max_length: Optional[int] = None,
        level: Optional[Level] = None,
        device: Optional[str] = None,
        use_gpu: bool = True,
        precision: Precision = "auto",
        quantize: Optional[Quantize] = None,
    ):
        if quantize is not None and precision not in ("auto", "fp32"):
            raise ValueError(f"quantize={quantize!r} replaces precision={precision!r}: give one of them")
        overrides = dict(pooling=pooling, normalize=normalize, max_length=max_length, level=level)
        in_model = manifest_tower_config(Path(model_name_or_path), self.role)  # a tower folder of a model directory
        self.tokenizer, self.model, self.config = load_tower(model_name_or_path, overrides, in_model)
        self.model_name_or_path = model_name_or_path
        self.device = pick_device(default_device(device, quantize), use_gpu)
        self.dtype = pick_dtype(self.device, precision)
        self.model.eval()  # before copying: the int8 copy must not carry dropout
        # quantized() refuses a GPU before the model is moved there; None where int8 does not pay on this CPU
        self._quantized = None if quantize is None else quantized(self.model, quantize, self.device)
        self.model.to(self.device)
        cls_id = self.tokenizer.cls_token_id if self.tokenizer.cls_token_id is not None else self.tokenizer.bos_token_id
        sep_id = self.tokenizer.sep_token_id if self.tokenizer.sep_token_id is not None else self.tokenizer.eos_token_id
        self.open_ids = [cls_id] if cls_id is not None else []
        self.close_ids = [sep_id] if sep_id is not None else []
        self.marker_id = (
            self.tokenizer.convert_tokens_to_ids(self.config.marker) if self.config.pooling == "marker" else None
        )
        self.pad_id = self.tokenizer.pad_token_id or 0
        # CPU inference is fastest with small batches whose activations stay in cache (measured:
        # ~1,000 tokens a batch beats 32 windows by 1.3x); GPUs want large ones.
        self.max_batch_tokens = 1024 if self.device.type == "cpu" else 65536
        self._raw_tokenizer = _raw_fast_tokenizer(self.tokenizer)

    @property
    def dim(self) -> int:
        return self.model.config.hidden_size

    @property
    def inference_model(self) -> torch.nn.Module:
        """What ``encode_*`` runs: the int8 copy when quantised, else the model itself (which the
        trainer may have changed since loading)."""
        return self._quantized if self._quantized is not None else self.model

    @property
    def budget(self) -> int:
        """Tokens available for text in one window, after the opening and closing special tokens."""
        return self.config.max_length - len(self.open_ids) - len(self.close_ids)

    def tokenize(self, texts: Sequence[str]) -> List[List[int]]:
        if not texts:
            return []
        if self._raw_tokenizer is not None:
            encodings = self._raw_tokenizer.encode_batch(list(texts), add_special_tokens=False)
            return [encoding.ids for encoding in encodings]
        return [self.tokenizer.encode(text, add_special_tokens=False) for text in texts]

    def forward(
        self, windows: Sequence[Window], n_rows: Optional[int] = None, model: Optional[torch.nn.Module] = None
    ) -> torch.Tensor:
        """Pooled vectors, one per output row, differentiable (the trainer calls this directly).

        Rows are numbered by the windows' segments; ``n_rows`` defaults to the largest row + 1;
        ``model`` runs the windows (default: the trainable ``self.model``; inference passes its own).
        Windows run in length-sorted chunks of at most ``max_batch_tokens`` padded tokens: less
        padding, and on CPU activations that stay in cache (training included: 1.6x per step).
        """
        if n_rows is None:
            n_rows = max(row for window in windows for row, _, _ in window.segments) + 1
        dim = self.model.config.hidden_size
        sums = torch.zeros((n_rows, dim), device=self.device)
        counts = torch.zeros(n_rows, device=self.device)
        order = sorted(range(len(windows)), key=lambda i: len(windows[i].input_ids), reverse=True)
        lengths = [len(windows[i].input_ids) for i in order]
        for chunk in _token_batches(order, lengths, len(order), self.max_batch_tokens):
            rows, tokens = self._segment_tokens([windows[i] for i in chunk], self.model if model is None else model)
            sums = sums.index_add(0, rows, tokens)
            counts = counts.index_add(0, rows, torch.ones_like(rows, dtype=torch.float))
        vectors = sums / counts.clamp(min=1).unsqueeze(1)
        return F.normalize(vectors, dim=-1) if self.config.normalize else vectors

    def _segment_tokens(self, windows: Sequence[Window], model: torch.nn.Module) -> Tuple[torch.Tensor, torch.Tensor]:
        """One forward pass: the output row of every pooled token and its hidden state (fp32)."""
        length = max(len(w.input_ids) for w in windows)
        input_ids = torch.full((len(windows), length), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(windows), length), dtype=torch.long)
        segment = torch.full((len(windows), length), -1, dtype=torch.long)
        for b, window in enumerate(windows):
            input_ids[b, : len(window.input_ids)] = torch.tensor(window.input_ids)
            attention[b, : len(window.input_ids)] = 1
            for row, start, end in window.segments:
                segment[b, start:end] = row
        hidden = model(input_ids=input_ids.to(self.device), attention_mask=attention.to(self.device)).last_hidden_state
        flat_segment = segment.view(-1).to(self.device)
        keep = flat_segment >= 0
        return flat_segment[keep], hidden.reshape(-1, hidden.shape[-1])[keep].float()

    def encode_windows(
        self, windows: List[Window], n_rows: int, batch_size: int = 32, progress_bar: bool = False, desc: str = ""
    ) -> np.ndarray:
        """Inference over many windows: sorted by length so padding is minimal, no grad, in batches
        of at most ``batch_size`` windows and ``max_batch_tokens`` padded tokens."""
        output = np.zeros((n_rows, self.dim), dtype=np.float32)
        order = sorted(range(len(windows)), key=lambda i: len(windows[i].input_ids), reverse=True)
        lengths = [len(windows[i].input_ids) for i in order]
        with (
            torch.inference_mode(),
            torch.autocast(self.device.type, dtype=self.dtype, enabled=self.dtype != torch.float32),
        ):
            for batch in tqdm(
                list(_token_batches(order, lengths, batch_size, self.max_batch_tokens)),
                disable=not progress_bar,
                desc=desc,
                unit=" batches",
                leave=False,
            ):
                local, rows = renumber([windows[i] for i in batch])
                vectors = self.forward(local, n_rows=len(rows), model=self.inference_model)
                output[rows] = vectors.float().cpu().numpy()
        return output

    def text_windows(self, texts: Sequence[str], what: str = "Text") -> List[Window]:
        """One vector per text (questions; whole passages for DPR): ``[CLS] (<sent>) text [SEP]``,
        truncated to ``max_length``, pooled at the marker, at [CLS] or over all tokens."""
        for i, text in enumerate(texts):
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"{what} {i} is empty: {text!r}")
        marker = [self.marker_id] if self.marker_id is not None else []
        windows = []
        for row, ids in enumerate(self.tokenize(texts)):
            input_ids = self.open_ids + marker + ids[: self.budget - len(marker)] + self.close_ids
            if marker:
                position = len(self.open_ids)
                segments = [(row, position, position + 1)]
            elif self.config.pooling == "cls":
                segments = [(row, 0, 1)]
            else:
                segments = [(row, 0, len(input_ids))]
            windows.append(Window(input_ids, segments))
        return windows

    def encode_texts(
        self, texts: Sequence[str], batch_size: int = 64, progress_bar: bool = False, what: str = "Text"
    ) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.encode_windows(
            self.text_windows(texts, what), len(texts), batch_size, progress_bar, desc=f"Encoding {what.lower()}s"
        )

    role = "query"  # what sentence-transformers would load it as: one vector per text

    def save(self, directory: Union[str, Path], own_config: bool = True) -> None:
        """An HF directory; ``own_config=False`` inside a model directory, whose ``dcsr_model.json`` is its config."""
        save_tower(directory, self.tokenizer, self.model, self.config, role=self.role, own_config=own_config)


class PassageTower(Tower):
    """Encodes each passage whole and returns one vector per sentence (DCSR's passage tower).

    With ``marker`` pooling the input is ``[CLS] <sent> s1 <sent> s2 ... [SEP]`` and a sentence's
    vector is the hidden state at its marker; with ``mean`` pooling there are no markers and a
    sentence's vector is the mean of its contextual token states. Passages longer than
    ``max_length`` are cut into overlapping windows of whole sentences; each sentence is pooled
    from one window that holds it with context on both sides where possible. A single sentence
    longer than a window keeps its first ``max_length - 3`` tokens.

    A passage-level tower (``level="passage"``, DPR) reads each passage as one text, as in
    training; its passages must come unsplit (one "sentence" each).
    """

    role = "passage"

    def windows(self, passages: Sequence[Sequence[str]]) -> Tuple[List[Window], int]:
        """Windows for ``passages`` (each a list of sentences); rows number sentences in order."""
        flat = list(_flatten(passages))
        if self.config.level == "passage":
            if any(len(sentences) != 1 for sentences in passages):
                raise ValueError(
                    "This passage tower is passage-level (DPR): it encodes whole passages, one vector each. "
                    "Index each passage as one unit (the sentence splitter's split_sentences=False)."
                )
            return self.text_windows(flat, what="Passage"), len(flat)
        tokens = self.tokenize(flat)
        marker = [self.marker_id] if self.marker_id is not None else []
        limit = self.budget - len(marker)
        windows: List[Window] = []
        row = 0
        for sentences in passages:
            ids = [t[:limit] for t in tokens[row : row + len(sentences)]]
            costs = [len(marker) + len(t) for t in ids]
            for start, end, own_start, own_end in plan_windows(costs, self.budget):
                input_ids = list(self.open_ids)
                segments = []
                for j in range(start, end):
                    position = len(input_ids)
                    input_ids.extend(marker)
                    input_ids.extend(ids[j])
                    if own_start <= j < own_end:
                        if marker:
                            segments.append((row + j, position, position + 1))
                        else:
                            segments.append((row + j, position, max(position + 1, len(input_ids))))
                input_ids.extend(self.close_ids)
                windows.append(Window(input_ids, segments))
            row += len(sentences)
        return windows, row

    def encode(self, passages: Sequence[Sequence[str]], batch_size: int = 32, progress_bar: bool = False) -> np.ndarray:
        """(total sentences, dim) float32: the vectors of all sentences of all passages, in order."""
        windows, n_rows = self.windows(passages)
        if n_rows == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.encode_windows(windows, n_rows, batch_size, progress_bar, desc="Encoding passages")


class QueryTower(Tower):
    """Encodes questions: ``[CLS] <sent> q [SEP]`` read at the marker (DCSR), or mean/[CLS] pooled."""

    def windows(self, queries: Sequence[str]) -> List[Window]:
        return self.text_windows(queries, what="Query")

    def encode(self, queries: Sequence[str], batch_size: int = 64, progress_bar: bool = False) -> np.ndarray:
        return self.encode_texts(queries, batch_size, progress_bar, what="Query")

    def warm_up(self) -> None:
        """An int8 tower compiles now rather than at the first query (``int8.warm_up``); fp32: nothing."""
        if self._quantized is not None:
            warm_up(lambda n: self.encode(["warm up"] * n, batch_size=n))


def plan_windows(costs: Sequence[int], budget: int) -> List[Tuple[int, int, int, int]]:
    """Cover sentences of token ``costs`` with windows of at most ``budget`` tokens.

    Returns ``(start, end, own_start, own_end)`` per window: sentences ``[start, end)`` are in the
    window and ``[own_start, own_end)`` are pooled from it. Owned ranges partition all sentences;
    up to a quarter of the budget on each side is kept as context. Every cost must be <= budget.
    """
    n, context = len(costs), budget // 4
    plans = []
    own_start = 0
    while own_start < n:
        start, used = own_start, 0
        while start > 0 and used + costs[start - 1] <= context:
            start -= 1
            used += costs[start]
        end, total = own_start, used
        while end < n and total + costs[end] <= budget:
            total += costs[end]
            end += 1
        if end == own_start:  # left context crowded out the sentence itself
            start, end = own_start, own_start + 1
        own_end = end
        if end < n:
            right = 0
            while own_end - 1 > own_start and right + costs[own_end - 1] <= context:
                own_end -= 1
                right += costs[own_end]
        plans.append((start, end, own_start, own_end))
        own_start = own_end
    return plans


def _raw_fast_tokenizer(tokenizer):
    """The Rust tokenizer without the padding/truncation some tokenizer.json files switch on:
    windows are cut by sentence here, never by the tokenizer."""
    if not tokenizer.is_fast:
        return None
    from tokenizers import Tokenizer

    raw = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    raw.no_padding()
    raw.no_truncation()
    return raw


def _flatten(passages: Sequence[Sequence[str]]) -> Iterator[str]:
    for sentences in passages:
        yield from sentences


def _token_batches(order: List[int], lengths: List[int], size: int, max_tokens: int) -> Iterator[List[int]]:
    """Consecutive runs of ``order`` (longest first) with at most ``size`` items and at most
    ``max_tokens`` padded tokens (count x the run's first, longest length)."""
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and end - start < size and (end - start + 1) * lengths[start] <= max_tokens:
            end += 1
        yield order[start:end]
        start = end


def renumber(windows: List[Window]) -> Tuple[List[Window], List[int]]:
    """Rows of a batch renumbered from 0, and the global row of each local one."""
    mapping: dict = {}
    local = []
    for window in windows:
        segments = [(mapping.setdefault(row, len(mapping)), s, e) for row, s, e in window.segments]
        local.append(Window(window.input_ids, segments))
    return local, list(mapping.keys())
