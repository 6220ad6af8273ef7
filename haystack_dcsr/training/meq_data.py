"""MEQ data from a QA dataset with gold passages: contrast sets for evaluation, augmentations for training.

Candidate pairs are questions about the same article (``positive_ctxs[0].title``): that is where
SQuAD's crowd workers wrote near-identical questions with different answers. ``MEQFilter`` decides
which pairs are MEQs; a pair that passes every text rule except "different answer" and shares
the gold passage is a paraphrase (q+) instead.

* ``build_contrast_set`` writes ``pairs.jsonl`` (retrieval: q, q', answers, gold passages, a
  paraphrase of q where one was found) and
  ``ranking.jsonl`` (each question of a pair with 50 candidate passage ids: the gold passage first,
  then 30 BM25 negatives without an answer, then 19 random passages without an answer). A
  dataset that asks a question twice would pair every copy; only the first pair of two texts is kept.
* ``build_augmentation`` writes trainer records with ``negative_questions`` (MEQs, each with its
  own answers and positive passage) and ``positive_questions`` (paraphrases) where found.
"""

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from haystack_dcsr.core.ranking.metrics import contains_answer, normalize_for_matching
from haystack_dcsr.core.text.meq import MEQFilter, answers_differ, candidate_pairs, words
from haystack_dcsr.training.data import Passage, Record, read_json

RANKING_HARD, RANKING_RANDOM = 30, 19


def article_groups(records: Sequence[Record]) -> Dict[str, List[int]]:
    groups: Dict[str, List[int]] = defaultdict(list)
    for i, record in enumerate(records):
        groups[record.positives[0].title].append(i)
    return groups


def word_pairs(records: Sequence[Record], max_edits: int = 3) -> List[Tuple[int, int]]:
    """Same-article pairs that can be within ``max_edits`` word edits. Cheap set arithmetic first:
    each edit changes at most two word types, so more than 2 * max_edits differing types rules
    a pair out before the edit distance is computed."""
    tokens = [words(r.question) for r in records]
    types = [frozenset(t) for t in tokens]
    return [
        (i, j)
        for i, j in candidate_pairs(article_groups(records), tokens, max_edits)
        if len(types[i] ^ types[j]) <= 2 * max_edits
    ]


class Mined:
    """MEQ pairs (i < j) with their verdicts, rejections per rule, the candidate count, and the
    paraphrase pairs; the same-article candidate pairs are computed once for both searches."""

    def __init__(self, records: Sequence[Record], meq_filter: MEQFilter):
        pairs = word_pairs(records, meq_filter.max_edits)
        questions = [(r.question, r.answers) for r in records]
        self.meqs, self.rejected = meq_filter.filter_pairs(questions, pairs)
        self.candidate_pairs = len(pairs)
        self.paraphrases = paraphrase_pairs(records, meq_filter, questions, pairs)

    def meq_neighbours(self) -> Dict[int, List[int]]:
        return neighbours((i, j) for i, j, _ in self.meqs)

    def paraphrase_neighbours(self) -> Dict[int, List[int]]:
        return neighbours(self.paraphrases)


def neighbours(pairs) -> Dict[int, List[int]]:
    """Each index's partners in ``pairs``, in pair order."""
    out: Dict[int, List[int]] = defaultdict(list)
    for i, j in pairs:
        out[i].append(j)
        out[j].append(i)
    return out


def paraphrase_pairs(records: Sequence[Record], meq_filter: MEQFilter, questions, pairs) -> List[Tuple[int, int]]:
    """Among ``pairs``, those with the same gold passage and the same answer that pass the edit and
    question-word rules (and the cosine, when the filter embeds): stand-in paraphrases (q+)."""
    same_answer = MEQFilter(
        embed=meq_filter.embed,
        threshold=meq_filter.threshold,
        min_edits=meq_filter.min_edits,
        max_edits=meq_filter.max_edits,
        trivial_additions=(),
        different_answers=False,
        answer_rule=meq_filter.answer_rule,
    )
    candidates = [
        (i, j)
        for i, j in pairs
        if records[i].positives[0].key == records[j].positives[0].key
        and not answers_differ(records[i].answers, records[j].answers, meq_filter.answer_rule)
    ]
    accepted, _ = same_answer.filter_pairs(questions, candidates)
    return [(i, j) for i, j, _ in accepted]


def ranking_candidates(
    record: Record,
    hard: Sequence[Passage],
    corpus: Sequence[Passage],
    rng: random.Random,
    n_hard: int = RANKING_HARD,
    n_random: int = RANKING_RANDOM,
) -> List[str]:
    """Candidate passage ids: the gold passage, ``n_hard`` BM25 negatives, ``n_random`` random
    passages; negatives never contain an answer."""
    answers = [normalize_for_matching(a) for a in record.answers]
    gold = record.positives[0].key
    chosen = [gold] + [p.key for p in hard if p.key != gold][:n_hard]
    if len(chosen) < 1 + n_hard:
        raise ValueError(f"Only {len(chosen) - 1} BM25 negatives for {record.question!r}: mine with a larger top_k")
    taken = set(chosen)
    while len(chosen) < 1 + n_hard + n_random:
        passage = corpus[rng.randrange(len(corpus))]
        if passage.key not in taken and not contains_answer(normalize_for_matching(passage.text), answers):
            chosen.append(passage.key)
            taken.add(passage.key)
    return chosen


def first_of_each_text_pair(text_pairs: Sequence[Tuple[str, str]]) -> List[bool]:
    """For each (question, question) pair: True unless an earlier pair has the same two texts (in
    either order). The builder and the contrast audit share this one notion of a repeat."""
    seen = set()
    first = []
    for texts in map(frozenset, text_pairs):
        first.append(texts not in seen)
        seen.add(texts)
    return first


def build_contrast_set(
    records: List[Record],
    corpus: List[Passage],
    meq_filter: MEQFilter,
    out_dir: Union[str, Path],
    search=None,
    seed: int = 0,
    keep_repeats: bool = False,
) -> Dict:
    """Mine MEQ pairs among ``records`` and write ``pairs.jsonl`` and ``ranking.jsonl`` to ``out_dir``.

    :param search: a miner's search over ``corpus`` (``training.mining``; default: BM25 over it).
    :param keep_repeats: keep a pair whose two question texts an earlier pair already has (either
        order). Datasets repeat questions (SQuAD dev asks "Who won Super Bowl 50?" twice), and every
        copy would pair again, weighting that pair twice or four times in each metric and paired
        test; ``True`` rebuilds the 352-pair set the benchmark tables were measured on.
    """
    from haystack_dcsr.training.mining import bm25_search

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    mined = Mined(records, meq_filter)
    accepted = mined.meqs
    if not keep_repeats:
        first = first_of_each_text_pair([(records[i].question, records[j].question) for i, j, _ in accepted])
        accepted = [pair for pair, keep in zip(accepted, first) if keep]
    paraphrase_of = {i: partners[0] for i, partners in mined.paraphrase_neighbours().items()}
    members = sorted({k for i, j, _ in accepted for k in (i, j)})
    search = search or bm25_search(corpus)
    hits = search([records[k].question for k in members], 4 * RANKING_HARD)
    answers_of = {k: [normalize_for_matching(a) for a in records[k].answers] for k in members}
    hard = {
        k: [p for p in passages if not contains_answer(normalize_for_matching(p.text), answers_of[k])]
        for k, passages in zip(members, hits)
    }
    rng = random.Random(seed)
    with (
        (out / "pairs.jsonl").open("w", encoding="utf-8") as pairs_file,
        (out / "ranking.jsonl").open("w", encoding="utf-8") as ranking_file,
    ):
        for number, (i, j, verdict) in enumerate(accepted):
            q, q2 = records[i], records[j]
            pairs_file.write(
                json.dumps(
                    {
                        "pair": number,
                        "question": q.question,
                        "answers": q.answers,
                        "gold": q.positives[0].key,
                        "meq": q2.question,
                        "meq_answers": q2.answers,
                        "meq_gold": q2.positives[0].key,
                        "paraphrase": records[paraphrase_of[i]].question if i in paraphrase_of else None,
                        "edit_distance": verdict.distance,
                        "cosine": verdict.similarity,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
            for role, k in (("q", i), ("meq", j)):
                ranking_file.write(
                    json.dumps(
                        {
                            "pair": number,
                            "role": role,
                            "question": records[k].question,
                            "answers": records[k].answers,
                            "candidates": ranking_candidates(records[k], hard[k], corpus, rng),
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
    summary = {
        "questions": len(records),
        "candidate_pairs": mined.candidate_pairs,
        "pairs": len(accepted),
        "repeats_dropped": len(mined.meqs) - len(accepted),
        "rejected": mined.rejected,
        "threshold": meq_filter.threshold,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def build_augmentation(
    records: List[Record], meq_filter: MEQFilter, output: Union[str, Path], max_meqs: Optional[int] = 5
) -> Dict:
    """Write ``records`` with mined MEQs (``negative_questions``) and paraphrases
    (``positive_questions``, kept when the input already has some) as trainer JSONL."""
    mined = Mined(records, meq_filter)
    meqs, paraphrases = mined.meq_neighbours(), mined.paraphrase_neighbours()
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("w", encoding="utf-8") as handle:
        for i, record in enumerate(records):
            raw = record.to_json()
            found = [records[j].question for j in paraphrases.get(i, [])]
            raw["positive_questions"] = list(dict.fromkeys(record.positive_questions + found))
            raw["negative_questions"] = [
                {
                    "question": records[j].question,
                    "answers": records[j].answers,
                    "positive_ctxs": [p.to_json() for p in records[j].positives],
                }
                for j in meqs.get(i, [])[:max_meqs]
            ]
            handle.write(json.dumps(raw, ensure_ascii=False) + "\n")
    return {
        "questions": len(records),
        "candidate_pairs": mined.candidate_pairs,
        "meq_pairs": len(mined.meqs),
        "with_meq": len(meqs),
        "with_paraphrase": len(paraphrases),
        "rejected": mined.rejected,
    }


def ambigqa_pairs(path: Union[str, Path], meq_filter: Optional[MEQFilter] = None) -> List[Tuple[str, str]]:
    """Reference MEQ pairs for calibrating the cosine threshold: AmbigQA's disambiguated questions
    of one prompt (e.g. "Who is the 3rd / 4th chairman of ...?") that pass the text rules."""
    data = read_json(path)
    rules = meq_filter or MEQFilter()
    pairs = []
    for item in data:
        for annotation in item.get("annotations", []):
            qa = annotation.get("qaPairs", []) if annotation.get("type") == "multipleQAs" else []
            for x, first in enumerate(qa):
                for second in qa[x + 1 :]:
                    if rules.text_rules(
                        first["question"], second["question"], first["answer"], second["answer"]
                    ).accepted:
                        pairs.append((first["question"], second["question"]))
    return pairs
