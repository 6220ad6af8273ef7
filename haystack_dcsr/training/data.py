"""Training data: DPR-format records, extended with the MEQ paper's question augmentations.

A record (one JSON object, in a JSON list or one per line of a JSONL file)::

    {"question": "...", "answers": ["..."],
     "positive_ctxs": [{"title": "...", "text": "...", "passage_id": "..."}],
     "negative_ctxs": [...], "hard_negative_ctxs": [...],
     "positive_questions": ["a paraphrase (q+)"],
     "negative_questions": [{"question": "a minimally edited question (q-)", "answers": [...],
                             "positive_ctxs": [...]}]}

``hard_negative_questions`` (the MEQ reference code's name) is read as ``negative_questions``.
"""

import contextlib
import dataclasses
import gzip
import hashlib
import json
import logging
import zlib
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from haystack_dcsr.core.ranking.metrics import contains_answer, has_answer, normalize_for_matching

logger = logging.getLogger(__name__)


class DataError(ValueError):
    """A malformed training file; the message names the file and the record."""


@dataclasses.dataclass
class Passage:
    title: str
    text: str
    passage_id: Optional[str] = None

    @property
    def key(self) -> str:
        """Identity (duplicates in a batch, document ids): the id when given, else a hash of the text."""
        if self.passage_id:
            return self.passage_id
        return hashlib.md5(f"{self.title}\n{self.text}".encode("utf-8")).hexdigest()

    def to_json(self) -> Dict[str, Any]:
        out = {"title": self.title, "text": self.text}
        if self.passage_id is not None:
            out["passage_id"] = self.passage_id
        return out


@dataclasses.dataclass
class Record:
    question: str
    answers: List[str]
    positives: List[Passage]
    negatives: List[Passage] = dataclasses.field(default_factory=list)
    hard_negatives: List[Passage] = dataclasses.field(default_factory=list)
    positive_questions: List[str] = dataclasses.field(default_factory=list)
    negative_questions: List["Record"] = dataclasses.field(default_factory=list)

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "question": self.question,
            "answers": self.answers,
            "positive_ctxs": [p.to_json() for p in self.positives],
            "negative_ctxs": [p.to_json() for p in self.negatives],
            "hard_negative_ctxs": [p.to_json() for p in self.hard_negatives],
        }
        if self.positive_questions:
            out["positive_questions"] = self.positive_questions
        if self.negative_questions:
            out["negative_questions"] = [q.to_json() for q in self.negative_questions]
        return out


def answerless_negatives(
    record: Record, ranked: Iterable[Passage], keep: int, normalized: Optional[Dict[str, str]] = None
) -> List[Passage]:
    """The first ``keep`` of a retriever's ``ranked`` passages that are not a positive of ``record``
    and hold none of its answers: the hard-negative rule of DPR's recipe, shared by BM25 and dense
    (DCSR-hard) mining. ``normalized`` caches passage texts by key across records."""
    normalized = {} if normalized is None else normalized
    positives = {p.key for p in record.positives}
    answers = [normalize_for_matching(a) for a in record.answers]
    chosen = []
    for passage in ranked:
        if len(chosen) == keep:
            break
        if passage.key not in normalized:
            normalized[passage.key] = normalize_for_matching(passage.text)
        if passage.key not in positives and not contains_answer(normalized[passage.key], answers):
            chosen.append(passage)
    return chosen


@dataclasses.dataclass
class LoadReport:
    """What loading found: usable records and the ones set aside, by reason."""

    records: List[Record]
    without_answer_in_positive: List[int] = dataclasses.field(default_factory=list)

    def summary(self, path: Union[str, Path]) -> str:
        return (
            f"{path}: {len(self.records)} usable records; {len(self.without_answer_in_positive)} set aside "
            "because no positive passage contains an answer"
        )


def load_records(path: Union[str, Path], require_answer_in_positive: bool = True) -> LoadReport:
    """Read and validate a DPR-format JSON/JSONL(.gz) file.

    Records whose positive passages contain none of the answers are counted, logged and left out
    (they would teach the model that answer-free passages are positives).
    """
    report = LoadReport(records=[])
    shared: Dict[Tuple[str, str, Optional[str]], Passage] = {}
    for number, (where, raw) in enumerate(_raw_records(Path(path))):
        record = _share_passages(parse_record(raw, f"{path}: {where}"), shared)
        if (
            require_answer_in_positive
            and record.answers
            and not any(has_answer(p.text, record.answers) for p in record.positives)
        ):
            report.without_answer_in_positive.append(number)
            continue
        report.records.append(record)
    if report.without_answer_in_positive:
        logger.warning(report.summary(path))
    return report


def parse_record(raw: Any, where: str, nested: bool = False) -> Record:
    if not isinstance(raw, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    question = raw.get("question")
    if not isinstance(question, str) or not question.strip():
        raise DataError(f"{where}: 'question' must be a non-empty string")
    answers = raw.get("answers", [])
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise DataError(f"{where}: 'answers' must be a list of strings")
    positives = _passages(raw.get("positive_ctxs"), f"{where}: positive_ctxs")
    if not positives:
        raise DataError(f"{where}: 'positive_ctxs' must hold at least one passage")
    record = Record(
        question=question,
        answers=answers,
        positives=positives,
        negatives=_passages(raw.get("negative_ctxs", []), f"{where}: negative_ctxs"),
        hard_negatives=_passages(raw.get("hard_negative_ctxs", []), f"{where}: hard_negative_ctxs"),
    )
    if nested:
        return record
    paraphrases = raw.get("positive_questions", [])
    if not isinstance(paraphrases, list) or not all(isinstance(q, str) and q.strip() for q in paraphrases):
        raise DataError(f"{where}: 'positive_questions' must be a list of non-empty strings")
    record.positive_questions = paraphrases
    meqs = raw.get("negative_questions", raw.get("hard_negative_questions", []))
    if not isinstance(meqs, list):
        raise DataError(f"{where}: 'negative_questions' must be a list")
    record.negative_questions = [
        parse_record(m, f"{where}: negative_questions[{i}]", nested=True) for i, m in enumerate(meqs)
    ]
    return record


def _share_passages(record: Record, shared: Dict[Tuple[str, str, Optional[str]], Passage]) -> Record:
    """Point equal passages of all records at one object: mined files repeat each passage many
    times (SQuAD train with 10 BM25 negatives: 0.9M copies of 21k passages)."""

    def one(passage: Passage) -> Passage:
        return shared.setdefault((passage.title, passage.text, passage.passage_id), passage)

    for name in ("positives", "negatives", "hard_negatives"):
        setattr(record, name, [one(p) for p in getattr(record, name)])
    for meq in record.negative_questions:
        _share_passages(meq, shared)
    return record


def _passages(raw: Any, where: str) -> List[Passage]:
    if not isinstance(raw, list):
        raise DataError(f"{where}: expected a list of passages")
    passages = []
    for i, ctx in enumerate(raw):
        if not isinstance(ctx, dict) or not isinstance(ctx.get("text"), str) or not ctx["text"].strip():
            raise DataError(f"{where}[{i}]: a passage needs a non-empty 'text'")
        passage_id = ctx.get("passage_id", ctx.get("id"))
        passages.append(
            Passage(
                title=str(ctx.get("title", "")),
                text=ctx["text"],
                passage_id=None if passage_id is None else str(passage_id),
            )
        )
    return passages


def _open(path: Path):
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


@contextlib.contextmanager
def _reading(path: Path):
    """Turn decoding failures (not UTF-8, not gzip, a truncated .gz) into a DataError naming the file."""
    try:
        yield
    except (UnicodeDecodeError, EOFError, zlib.error, gzip.BadGzipFile) as error:
        kind = "gzip-compressed UTF-8 text" if path.suffix == ".gz" else "UTF-8 text"
        raise DataError(f"{path}: cannot be read as {kind} ({type(error).__name__}: {error})") from error


def read_lines(path: Union[str, Path]) -> Iterator[Tuple[int, str]]:
    """(line number, line) of a text or .gz file; a DataError names the file if it cannot be read."""
    path = Path(path)
    with _reading(path), _open(path) as handle:
        yield from enumerate(handle, 1)


def read_json(path: Union[str, Path]) -> Any:
    path = Path(path)
    with _reading(path), _open(path) as handle:
        try:
            return json.load(handle)
        except json.JSONDecodeError as error:
            raise DataError(f"{path}: not valid JSON ({error})") from error


def _raw_records(path: Path) -> Iterator[Tuple[str, Any]]:
    """(where, record): where names the record as an editor finds it, the file's line in JSONL (blank
    lines count) or the item's position in a JSON list."""
    if ".jsonl" in path.suffixes:
        for line_number, line in read_lines(path):
            if line.strip():
                try:
                    yield f"line {line_number}", json.loads(line)
                except json.JSONDecodeError as error:
                    raise DataError(f"{path}: line {line_number} is not valid JSON ({error})") from error
        return
    data = read_json(path)
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of records (or use .jsonl)")
    yield from ((f"record {number} of the list", raw) for number, raw in enumerate(data))


def write_records(records: List[Record], path: Union[str, Path]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record.to_json(), ensure_ascii=False) + "\n")


def squad_to_records(squad_path: Union[str, Path], id_prefix: str = "") -> Tuple[List[Record], List[Passage]]:
    """SQuAD v1.1 JSON(.gz) -> (one record per question with its paragraph as positive, all paragraphs)."""
    path = Path(squad_path)
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise DataError(f"{path}: not a SQuAD file (no 'data' list)")
    records, passages = [], []
    for a, article in enumerate(data["data"]):
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            passage = Passage(
                title=article.get("title", ""), text=paragraph["context"], passage_id=f"{id_prefix}{a}-{p}"
            )
            passages.append(passage)
            for qa in paragraph.get("qas", []):
                answers = list(dict.fromkeys(ans["text"] for ans in qa.get("answers", [])))
                records.append(Record(question=qa["question"], answers=answers, positives=[passage]))
    return records, passages


def read_corpus(path: Union[str, Path]) -> List[Passage]:
    """The passages of a corpus JSONL file: one ``{"passage_id", "title", "text"}`` object a line."""
    passages = []
    for number, line in read_lines(path):
        if line.strip():
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as error:
                raise DataError(f"{path}: line {number} is not valid JSON ({error})") from error
            if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
                raise DataError(f"{path}: line {number}: a passage needs 'text'")
            passages.append(Passage(title=raw.get("title", ""), text=raw["text"], passage_id=raw.get("passage_id")))
    return passages


def write_corpus(passages: List[Passage], path: Union[str, Path]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for passage in passages:
            handle.write(json.dumps(passage.to_json(), ensure_ascii=False) + "\n")
