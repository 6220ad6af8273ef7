"""``rerank:BASE+MODEL_DIR`` systems of ``squad_open.py``: a cross-encoder over another system's top N.
``rerank-blend:`` orders that head by ``0.5 * CE + 0.5 * BASE`` instead, both min-max scaled over the N
(the hybrids' fusion): a reranker weaker than its first stage can still add what the first stage lacks.

The base system's rankings (top-100 of every dev and contrast question) and its scores of the MEQ
ranking's 50 candidates are reranked exactly as a Retriever -> Ranker pipeline serves them: the
base's first N passages reordered by the cross-encoder, the rest left below in the base's order.
The cross-encoder's logits are kept per model under the workdir (``PairScores``), so reranking a
second base scores only the (question, passage) pairs the first did not; a rerank row itself is
recomputed on every run, like a hybrid's, and follows its base when that changes.
"""

import hashlib
import json
import lzma
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from haystack_dcsr.core.model.cross_encoder import CrossEncoder, order_by_cross_encoder, rerank
from haystack_dcsr.core.model.int8 import Quantize


def directory_fingerprint(root: Path) -> str:
    """A hash of every file under ``root``: a model retrained into the same directory is a new model."""
    digest = hashlib.sha1()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 22), b""):
                digest.update(chunk)
    return digest.hexdigest()[:16]


# A model directory holding only this file: the model trained and scored on the GPU machine and its
# weights (mpnet-base: 209 MiB of fp16) stayed on the GPU machine; its scores are the cache
SCORED_ELSEWHERE = "scored_elsewhere.json"


def model_fingerprint(model_dir: Path) -> str:
    """The fingerprint its scores are cached under: its files' hash, or the scored model's as recorded there."""
    elsewhere = Path(model_dir) / SCORED_ELSEWHERE
    return json.loads(elsewhere.read_text())["fingerprint"] if elsewhere.is_file() else directory_fingerprint(model_dir)


class PairScores:
    """A cross-encoder's logits of (question, passage id) pairs, appended to a JSONL file as computed
    (an interrupted run keeps what it scored). ``quantize`` scores as ``CrossEncoder(quantize=...)`` does;
    its logits differ from fp32's in the last digits, so they are kept in a file of their own."""

    def __init__(
        self,
        model_dir: Path,
        texts: Dict[str, str],
        workdir: Path,
        chunk: int = 2048,
        quantize: Optional[Quantize] = None,
    ):
        if not Path(model_dir).is_dir():
            raise SystemExit(f"rerank: no cross-encoder directory {model_dir}")
        self.model_dir, self.texts, self.chunk, self.quantize = Path(model_dir), texts, chunk, quantize
        self.scored_elsewhere = (self.model_dir / SCORED_ELSEWHERE).is_file()
        suffix = f"-{quantize}" if quantize else ""
        self.path = workdir / f"cross-encoder-{model_fingerprint(self.model_dir)}{suffix}.jsonl"
        self.scores: Dict[Tuple[str, str], float] = {}
        if self.path.is_file():
            for line in self.path.read_text().splitlines():
                row = json.loads(line)
                self.scores[(row["q"], row["p"])] = row["s"]
        self._model = None

    def fill(self, wanted: Sequence[Tuple[str, str]]) -> int:
        """Scores the pairs not scored before; returns how many that was."""
        missing = list(dict.fromkeys(pair for pair in wanted if pair not in self.scores))
        if not missing:
            return 0
        if self.scored_elsewhere:
            raise SystemExit(
                f"rerank: {self.model_dir} was scored on another machine and its weights stayed there; "
                f"{len(missing)} pairs were not scored there, e.g. {missing[0]}"
            )
        self._model = self._model or CrossEncoder(str(self.model_dir), device="cpu", quantize=self.quantize)
        with self.path.open("a") as handle:
            for start in range(0, len(missing), self.chunk):
                part = missing[start : start + self.chunk]
                logits = self._model.score_pairs([(q, self.texts[pid]) for q, pid in part])
                for (q, pid), s in zip(part, logits):
                    self.scores[(q, pid)] = float(s)
                    handle.write(json.dumps({"q": q, "p": pid, "s": float(s)}) + "\n")
                print(f"  cross-encoder: {start + len(part)} / {len(missing)} new pairs scored", flush=True)
        return len(missing)

    def __call__(self, question: str, pids: Sequence[str]) -> List[float]:
        return [self.scores[(question, pid)] for pid in pids]


class PairsToScore:
    """Stands in for ``PairScores`` where the cross-encoder is not here yet (it trains on a GPU machine,
    ``gpu_cross_encoder.py``): records the pairs the rerank rows would score, and scores nothing.
    ``squad_open.py --pairs-to-score FILE`` writes them (one line a question) for that machine."""

    def __init__(self):
        self.wanted: Dict[str, Dict[str, None]] = {}  # question -> passage ids, in first-asked order
        self.scores: Dict[Tuple[str, str], float] = {}

    def fill(self, wanted: Sequence[Tuple[str, str]]) -> int:
        for question, pid in wanted:
            self.wanted.setdefault(question, {})[pid] = None
        return 0

    def __call__(self, question: str, pids: Sequence[str]) -> List[float]:
        return [0.0] * len(pids)

    def write(self, path: Path) -> int:
        """``{"q": question, "p": [passage id, ...]}`` lines, xz-compressed; returns the number of pairs."""
        with lzma.open(path, "wt") as handle:
            for question, pids in self.wanted.items():
                handle.write(json.dumps({"q": question, "p": list(pids)}) + "\n")
        return sum(map(len, self.wanted.values()))


def rerank_rankings(
    questions: Sequence[str], ranked: Sequence[list], scores: PairScores, top_n: int, blend: bool = False
) -> List[list]:
    """Every question's base ranking with its top ``top_n`` reordered by the cross-encoder (``blend``:
    by the cross-encoder and the base's own scores, fused)."""
    heads = [[tuple(x) for x in r[:top_n]] for r in ranked]
    scores.fill([(q, pid) for q, head in zip(questions, heads) for pid, _ in head])
    out = []
    for question, row, head in zip(questions, ranked, heads):
        logits = scores(question, [pid for pid, _ in head])
        if blend:  # the rankers' own blend (CrossEncoderRanker, DCSRCrossEncoderRanker) at weight 0.5
            blended = dict(order_by_cross_encoder(logits, [score for _, score in head], first_stage_weight=0.5))
            logits = [blended[i] for i in range(len(head))]
        out.append(rerank(list(map(tuple, row)), logits, top_n))
    return out


def rerank_candidates(
    ranking: List[Dict], base_scores: Sequence[Sequence[float]], scores: PairScores, top_n: int, blend: bool = False
) -> List[np.ndarray]:
    """The MEQ ranking's candidate scores after reranking the base's top ``top_n`` of the 50."""
    ordered = [sorted(zip(row["candidates"], base), key=lambda x: -x[1]) for row, base in zip(ranking, base_scores)]
    reranked = rerank_rankings([row["question"] for row in ranking], ordered, scores, top_n, blend)
    score_of = [dict(r) for r in reranked]  # one lookup table a row, not one a candidate
    return [np.array([of[c] for c in row["candidates"]]) for row, of in zip(ranking, score_of)]
