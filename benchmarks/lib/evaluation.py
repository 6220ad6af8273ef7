"""Evaluation of a retriever's rankings, framework-free: the logic behind the README's tables.

Rankings are plain lists, per question, of ``(passage id, score)`` best first, so any retriever
(Haystack 1.x or 2.x, BM25 or dense) is evaluated the same way: top-k accuracy (overall and by
question word), the MEQ paper's metrics (ranking of the gold passage among fixed candidates for q
and q', hit@k of both questions of a pair and the overlap of their top-k), score fusion of two
rankings, paired McNemar tests, and the Markdown tables the benchmarks write.
"""

import json
from itertools import combinations
from pathlib import Path
from typing import Callable, Dict, List, Literal, Optional, Sequence, Tuple, TypeVar, get_args

import numpy as np
from significance import mcnemar_exact, paired_rank_test, paired_sign_test

from haystack_dcsr.core.ranking.fusion import fuse, reciprocal_rank_fusion
from haystack_dcsr.core.ranking.metrics import (
    first_hit_ranks,
    mean_rank,
    mean_reciprocal_rank,
    own_gold_wins,
    pair_hits,
    query_contrast_accuracy,
    rank_of_positive,
    top_k_accuracy,
    top_k_by_group,
    top_k_overlap,
)
from haystack_dcsr.core.text.meq import question_word, words

KS = (1, 5, 20, 100)
DEPTH = 100
T = TypeVar("T")
Ranked = List[List[Tuple[str, float]]]  # per question: (passage id, score), best first
Question = Tuple[str, Sequence[str], object]  # (text, answers, anything else)

WH_GROUPS = {
    "what": "what",
    "which": "which",
    "who": "who",
    "whom": "who",
    "whose": "who",
    "when": "when",
    "where": "where",
    "why": "why",
    "how": "how",
}


def question_group(question: str) -> str:
    """The question's wh-word (who/whom/whose together), ``other`` for questions without one."""
    return WH_GROUPS.get(question_word(words(question)) or "", "other")


def retrieval_report(ranked: Ranked, questions: Sequence[Question], texts: Dict[str, str]) -> Dict:
    """Top-k accuracy (answer string in the passage), overall and by question word, plus each
    question's first-hit rank (kept for paired tests)."""
    ranks = first_hit_ranks([[texts[pid] for pid, _ in r] for r in ranked], [a for _, a, _ in questions])
    grouped = top_k_by_group(ranks, [question_group(q) for q, _, _ in questions], KS)
    return {
        "top_k": {str(k): v for k, v in top_k_accuracy(ranks, KS).items()},
        "by_question_word": {
            g: {"n": v["n"], "top_k": {str(k): a for k, a in v["top_k"].items()}} for g, v in grouped.items()
        },
        "ranks": ranks,
    }


FusionMode = Literal["min-max", "hasans-as-is", "rrf"]
FUSION_MODES = get_args(FusionMode)


def fuse_rankings(dense: Ranked, sparse: Ranked, weight: float = 0.5, mode: FusionMode = "min-max") -> Ranked:
    """A hybrid's ranking per question, over the union of both top lists. ``"min-max"``: weight * dense
    score + (1 - weight) * BM25 score, both min-max scaled per question (``fusion.fuse``, as the
    ``HybridJoin`` node does); ``"hasans-as-is"``: a probability (HasAns) kept as it is, the fusion of
    the README's earlier hybrid rows (dense scores outside [0, 1] are scaled either way); ``"rrf"``:
    ranks fused instead of scores, as Haystack's ``JoinDocuments(join_mode="reciprocal_rank_fusion")``."""
    _check_mode(mode)
    return [_fuse_one(d, s, weight, mode, DEPTH) for d, s in zip(dense, sparse)]


def _check_mode(mode: str) -> None:
    if mode not in FUSION_MODES:
        raise ValueError(f"fusion mode {mode!r}: expected one of {', '.join(FUSION_MODES)}")


def _fuse_one(dense, sparse, weight: float, mode: FusionMode, depth: Optional[int]):
    if mode == "rrf":
        return reciprocal_rank_fusion([dense, sparse], [weight, 1 - weight], depth)
    scale_dense = mode == "min-max" or not _is_probability(dense)
    return fuse([dense, sparse], [weight, 1 - weight], depth, scaled=[scale_dense, True])


def fuse_candidate_scores(
    dense: Sequence[Sequence[float]],
    sparse: Sequence[Sequence[float]],
    ranking: List[Dict],
    weight: float = 0.5,
    mode: FusionMode = "min-max",
) -> List[np.ndarray]:
    """A hybrid's scores of each ranking row's fixed candidates, fused from its two systems' scores of
    the same candidates exactly as ``fuse_rankings`` fuses their top lists, so a hybrid gets the MEQ
    ranking metrics (MR/MRR of the gold among the 50) like any single system. Dense scores must be
    on the served scale (HasAns as a probability, ``hasans.hasans_of_key``) for ``"hasans-as-is"``."""
    _check_mode(mode)
    if not len(dense) == len(sparse) == len(ranking):
        raise ValueError(f"{len(dense)} dense and {len(sparse)} sparse score rows for {len(ranking)} ranking rows")
    fused_rows = []
    for row, d, s in zip(ranking, dense, sparse):
        candidates = row["candidates"]
        if not len(d) == len(s) == len(candidates):
            raise ValueError(f"row {row['question']!r}: {len(d)} / {len(s)} scores for {len(candidates)} candidates")
        fused = dict(_fuse_one(list(zip(candidates, d)), list(zip(candidates, s)), weight, mode, None))
        fused_rows.append(np.array([fused[c] for c in candidates]))
    return fused_rows


def _is_probability(ranked) -> bool:
    return all(0.0 <= score <= 1.0 for _, score in ranked)


def cross_fitted_choice(options: Sequence[T], fold_of: np.ndarray, score: Callable[[T, np.ndarray], object]) -> List[T]:
    """Per fold, the option that scores best on the other folds' rows (``score(option, mask)``), so no
    row is judged by a choice it took part in. A choice read off the test rows themselves reads high
    (the max of noisy estimates); ties go to the earlier option, so list options in the order of
    a-priori preference."""
    return [max(options, key=lambda option: score(option, fold_of != fold)) for fold in range(int(fold_of.max()) + 1)]


def cross_fitted_weight(
    ranks_by_weight: Dict[float, Sequence[int]], k: int = 1, folds: int = 2, seed: int = 0, prior: float = 0.5
) -> Dict:
    """Each question's first-hit rank under a fusion weight chosen without it: the questions are
    split into ``folds`` at random and each fold is ranked with the weight of best top-k accuracy on
    the other folds (ties: the weight nearest ``prior``, the a-priori 0.5). Returns the held-out
    ranks and each fold's weight."""
    lengths = {len(ranks) for ranks in ranks_by_weight.values()}
    if len(lengths) != 1 or folds < 2:
        raise ValueError(f"need rank lists of one length and folds >= 2, got lengths {sorted(lengths)}, {folds} folds")
    n = lengths.pop()
    fold_of = np.random.default_rng(seed).permutation(n) % folds
    weights = sorted(sorted(ranks_by_weight), key=lambda w: abs(w - prior))
    hits = {w: (np.asarray(ranks_by_weight[w]) > 0) & (np.asarray(ranks_by_weight[w]) <= k) for w in weights}
    chosen = cross_fitted_choice(weights, fold_of, lambda w, train: int(hits[w][train].sum()))
    held_out = np.zeros(n, dtype=np.int64)
    for fold, best in enumerate(chosen):
        rows = fold_of == fold
        held_out[rows] = np.asarray(ranks_by_weight[best])[rows]
    return {"ranks": held_out.tolist(), "weights": chosen, "k": k, "folds": folds, "seed": seed}


def candidate_scores(score: Callable[[str, List[str]], np.ndarray], ranking: List[Dict]) -> List[np.ndarray]:
    """Each ranking row's scores of its fixed candidates, in candidate order."""
    return [np.asarray(score(r["question"], r["candidates"]), dtype=np.float64) for r in ranking]


def ranking_report(
    scores: Sequence[Sequence[float]],
    ranking: List[Dict],
    pairs: List[Dict],
    embed: Optional[Callable[[List[str]], np.ndarray]] = None,
) -> Dict:
    """MR and MRR of the gold passage (candidate 0) among its fixed candidates, for q and for q', from
    each row's candidate scores (``candidate_scores``); with ``embed`` (dense systems), the share of q
    closer to a paraphrase q+ than to its MEQ q-."""
    if len(scores) != len(ranking):
        raise ValueError(f"{len(scores)} score rows for {len(ranking)} ranking rows")
    out: Dict = {}
    for role in ("q", "meq"):
        ranks = [rank_of_positive(np.asarray(s)) for r, s in zip(ranking, scores) if r["role"] == role]
        out[f"ranking_{role}"] = {
            "MR": mean_rank(ranks),
            "MRR": mean_reciprocal_rank(ranks),
            "n": len(ranks),
            "ranks": ranks,  # per row, for paired tests between systems (ranking_paired_report)
        }
    with_paraphrase = [p for p in pairs if p.get("paraphrase")]
    if embed is not None and with_paraphrase:
        q = embed([p["question"] for p in with_paraphrase])
        positive = embed([p["paraphrase"] for p in with_paraphrase])
        negative = embed([p["meq"] for p in with_paraphrase])
        out["query_contrast"] = {
            "accuracy": query_contrast_accuracy((q * positive).sum(1), (q * negative).sum(1)),
            "n": len(with_paraphrase),
        }
    return out


def pair_report(ranked_of: Dict[str, List], pairs: List[Dict], texts: Dict[str, str]) -> Dict:
    """Retrieval over the whole corpus for both questions of each pair: hit@k of q, of q', of both,
    the overlap of their top-k passages, and, for pairs whose gold passages differ, how often each
    question ranks its own gold above the other's (``own_gold_wins``)."""
    first = {}
    for role, key, answers in (("q", "question", "answers"), ("meq", "meq", "meq_answers")):
        first[role] = first_hit_ranks(
            [[texts[pid] for pid, _ in ranked_of[p[key]]] for p in pairs], [p[answers] for p in pairs]
        )
    hits = pair_hits(first["q"], first["meq"], KS)
    ids = {question: [pid for pid, _ in ranked] for question, ranked in ranked_of.items()}
    split = [p for p in pairs if p["gold"] != p["meq_gold"]]  # pairs whose answers live in different passages
    golds = [p["gold"] for p in split], [p["meq_gold"] for p in split]
    wins = {
        "meq": own_gold_wins([ids[p["meq"]] for p in split], golds[1], golds[0]),
        "q": own_gold_wins([ids[p["question"]] for p in split], golds[0], golds[1]),
    }
    return {
        "hits": {role: {str(k): v for k, v in values.items()} for role, values in hits.items()},
        "own_gold_first": {
            **{role: float(np.mean(w)) if w else 0.0 for role, w in wins.items()},
            "pairs": len(split),
            "wins": {role: [int(x) for x in w] for role, w in wins.items()},  # per pair: paired tests across systems
        },
        "overlap": {
            str(k): top_k_overlap([ids[p["question"]] for p in pairs], [ids[p["meq"]] for p in pairs], k)
            for k in (5, 20, 100)
        },
    }


def _pairs_of(names: Sequence[str], pairs: Optional[Sequence[Tuple[str, str]]]) -> List[Tuple[str, str]]:
    """``pairs`` whose systems are both in ``names`` (every pair of ``names`` when None): tests cost
    quadratic space over all pairs, so reports keep per-question outcomes and test chosen pairs."""
    if pairs is None:
        return list(combinations(names, 2))
    return [(a, b) for a, b in pairs if a in names and b in names]


def paired_report(
    first_hits: Dict[str, List[int]], names: Sequence[str], pairs: Optional[Sequence[Tuple[str, str]]] = None
) -> Dict:
    """McNemar's exact test at top-1 and top-20 for each pair of systems (every pair unless ``pairs``)."""
    return {
        f"{a} vs {b}": {str(k): paired_sign_test(first_hits[a], first_hits[b], k) for k in (1, 20)}
        for a, b in _pairs_of(names, pairs)
    }


def ranking_paired_report(systems: Dict[str, Dict], pairs: Optional[Sequence[Tuple[str, str]]] = None) -> Dict:
    """Wilcoxon tests of the MEQ ranking's reciprocal ranks, q and q', for each pair of systems (every
    pair unless ``pairs``) whose report keeps per-row ranks (``ranking_report``; older reports are skipped)."""
    ranked = {
        name: r["contrast"] for name, r in systems.items() if "ranks" in r.get("contrast", {}).get("ranking_q", {})
    }
    return {
        f"{a} vs {b}": {
            role: paired_rank_test(ranked[a][f"ranking_{role}"]["ranks"], ranked[b][f"ranking_{role}"]["ranks"])
            for role in ("q", "meq")
        }
        for a, b in _pairs_of(list(ranked), pairs)
    }


def own_gold_paired_report(systems: Dict[str, Dict], pairs: Optional[Sequence[Tuple[str, str]]] = None) -> Dict:
    """Exact McNemar tests of "own gold first", q' and q, for each pair of systems (every pair unless
    ``pairs``) whose report keeps the per-pair outcomes (reports written before ``pair_report`` kept
    them are skipped)."""
    kept = {
        name: r["contrast"]["own_gold_first"]["wins"]
        for name, r in systems.items()
        if "wins" in r.get("contrast", {}).get("own_gold_first", {})
    }
    return {
        f"{a} vs {b}": {role: mcnemar_exact(kept[a][role], kept[b][role]) for role in ("meq", "q")}
        for a, b in _pairs_of(list(kept), pairs)
    }


def load_contrast_set(directory: Path, limit: int = 0) -> Tuple[List[Dict], List[Dict]]:
    """``pairs.jsonl`` and ``ranking.jsonl`` of a contrast set
    (``python -m haystack_dcsr.training build-contrast-set``);
    ([], []) when the directory has none."""
    if not (directory / "pairs.jsonl").is_file():
        return [], []

    def read(name: str) -> List[Dict]:
        return [json.loads(line) for line in (directory / name).read_text().splitlines() if line.strip()]

    pairs, ranking = read("pairs.jsonl"), read("ranking.jsonl")
    if limit:
        pairs = pairs[:limit]
        ranking = [row for row in ranking if row["pair"] < limit]
    return pairs, ranking


def kept_outcomes(contrast: Dict, pairs: Sequence[Dict]) -> Tuple[Optional[np.ndarray], Optional[np.ndarray]]:
    """The per-pair outcomes a system's contrast report keeps, read back for studies across systems:
    q''s own-gold-first outcomes (``pair_report``: one per pair whose golds differ) and q''s rank among
    its candidates (``ranking_report``: one per pair); ``None`` for what it did not keep. Outcomes of
    another contrast set are refused rather than misaligned."""
    wins = contrast.get("own_gold_first", {}).get("wins", {}).get("meq")
    ranks = contrast.get("ranking_meq", {}).get("ranks")
    differ = sum(p["gold"] != p["meq_gold"] for p in pairs)
    if (wins is not None and len(wins) != differ) or (ranks is not None and len(ranks) != len(pairs)):
        raise ValueError(f"outcomes do not match the contrast set's {len(pairs)} pairs")
    return (
        None if wins is None else np.asarray(wins, dtype=bool),
        None if ranks is None else np.asarray(ranks, dtype=np.int64),
    )


def markdown_table(report: Dict) -> str:
    lines = [
        "| system | top-1 | top-5 | top-20 | top-100 | MEQ ranking MRR q / q' | MEQ ranking MR q / q' "
        "| MEQ hit@20 q / q' / both | MEQ top-20 overlap | own gold first q' / q | sim(q,q+) > sim(q,q-) | index (s) "
        "| query (ms/q) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in report["systems"].items():
        top = " | ".join(f"{100 * r['top_k'][str(k)]:.1f}" for k in KS)
        c, t = r.get("contrast", {}), r["timing"]
        mrr = f"{c['ranking_q']['MRR']:.3f} / {c['ranking_meq']['MRR']:.3f}" if "ranking_q" in c else "-"
        mr = f"{c['ranking_q']['MR']:.2f} / {c['ranking_meq']['MR']:.2f}" if "ranking_q" in c else "-"
        hits = " / ".join(f"{100 * c['hits'][role]['20']:.1f}" for role in ("q", "meq", "both")) if "hits" in c else "-"
        overlap = f"{100 * c['overlap']['20']:.1f}" if "overlap" in c else "-"
        first = c.get("own_gold_first")
        own = f"{100 * first['meq']:.1f} / {100 * first['q']:.1f}" if first else "-"
        contrast = f"{100 * c['query_contrast']['accuracy']:.1f}" if "query_contrast" in c else "-"
        index = f"{t['index_s']:.0f}" if "index_s" in t else "-"
        query = f"{t['query_ms_per_question']:.1f}" if "query_ms_per_question" in t else "-"
        lines.append(f"| {name} | {top} | {mrr} | {mr} | {hits} | {overlap} | {own} | {contrast} | {index} | {query} |")
    return "\n".join(lines)


def _tests_table(header: str, paired: Dict, columns: Sequence[str], counts: Tuple[str, str]) -> str:
    """One row per pair of systems: for each column, the two counts and the test's p."""
    lines = [header, "|---|" + "---|" * len(columns)]
    for pair, tests in paired.items():
        cells = [f"{tests[c][counts[0]]} / {tests[c][counts[1]]} ({tests[c]['p_value']:.2g})" for c in columns]
        lines.append(f"| {pair} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paired_table(report: Dict) -> str:
    """Every pair of systems: questions only A / only B gets in the top k, and McNemar's p."""
    header = "| A vs B | top-1: only A / only B (p) | top-20: only A / only B (p) |"
    return _tests_table(header, report.get("paired", {}), ("1", "20"), ("a_only", "b_only"))


def ranking_paired_table(report: Dict) -> str:
    """Every pair of systems with per-row MEQ ranks: rows where A / B ranks the gold higher, and
    the Wilcoxon p of their reciprocal ranks, for q and for q'."""
    header = "| A vs B | MEQ ranking q: A / B better (p) | q': A / B better (p) |"
    return _tests_table(header, report.get("ranking_paired", {}), ("q", "meq"), ("a_better", "b_better"))


def own_gold_paired_table(report: Dict) -> str:
    """Every pair of systems with per-pair outcomes: contrast pairs where only A / only B ranks the
    question's own gold first, and McNemar's p, for q' and for q."""
    header = "| A vs B | own gold first q': only A / only B (p) | q: only A / only B (p) |"
    return _tests_table(header, report.get("own_gold_paired", {}), ("meq", "q"), ("a_only", "b_only"))


def question_word_table(report: Dict) -> str:
    """top-1 / top-20 per question word, one column per word (largest groups first)."""
    systems = [(name, r["by_question_word"]) for name, r in report["systems"].items() if "by_question_word" in r]
    if not systems:
        return ""
    sizes = systems[0][1]
    groups = sorted(sizes, key=lambda g: (g == "other", -sizes[g]["n"]))
    lines = [
        "| top-1 / top-20 by question word | " + " | ".join(f"{g} ({sizes[g]['n']})" for g in groups) + " |",
        "|---|" + "---|" * len(groups),
    ]
    for name, by in systems:
        cells = [f"{100 * by[g]['top_k']['1']:.1f} / {100 * by[g]['top_k']['20']:.1f}" for g in groups]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


ContrastPair = Tuple[str, str, str, str, bool]  # q, q's gold text, q', q''s gold text, q's gold holds no answer of q'


def dev_contrast_pairs(contrast_set: Path, texts: Dict[str, str]) -> List[ContrastPair]:
    """The dev contrast set's unique pairs whose two golds differ, as (q, its gold, q', its gold, q's gold holds no
    answer of q')."""
    from haystack_dcsr.core.ranking.metrics import has_answer
    from haystack_dcsr.training.meq_data import first_of_each_text_pair

    pairs, _ = load_contrast_set(contrast_set)
    unique = first_of_each_text_pair([(p["question"], p["meq"]) for p in pairs])
    return [
        (
            p["question"],
            texts[p["gold"]],
            p["meq"],
            texts[p["meq_gold"]],
            not has_answer(texts[p["gold"]], p["meq_answers"]),
        )
        for p, first in zip(pairs, unique)
        if first and p["gold"] != p["meq_gold"]
    ]


def train_contrast_pairs(path: Path, n: int, seed: int) -> List[ContrastPair]:
    """A seeded sample of ``n`` training MEQ pairs whose golds differ and where q's gold holds no answer of q' (the
    trainer's rule for a contrast negative)."""
    import random

    from haystack_dcsr.core.ranking.metrics import has_answer
    from haystack_dcsr.training.data import load_records

    pairs = []
    for record in load_records(path).records:
        for edited in record.negative_questions:
            if record.positives and edited.positives and edited.positives[0].key != record.positives[0].key:
                gold, own = record.positives[0].text, edited.positives[0].text
                if not has_answer(gold, edited.answers):
                    pairs.append((record.question, gold, edited.question, own, True))
    return random.Random(seed).sample(pairs, min(n, len(pairs)))
