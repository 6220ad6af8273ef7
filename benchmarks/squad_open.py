"""The SQuAD-open benchmark: every system over all 20,963 SQuAD v1.1 paragraphs, dev questions.

Each system is ``NAME=KIND[:MODEL_DIR]``; kinds:
  bm25         embedded Lucene BM25 (SparseBM25DocumentStore + Haystack's BM25Retriever)
  er[:DIR]     Haystack EmbeddingRetriever, zero-shot (one vector per passage): all-MiniLM-L6-v2, or the
               sentence-transformers model in DIR (e.g. all-mpnet-base-v2: benchmarks/lib/fetch_mpnet.sh)
  dcsr-zero    DCSRRetriever, all-MiniLM-L6-v2 zero-shot, mean pooling, HasAns
  dcsr:DIR     DCSRRetriever with a trainer output (a DCSRModel directory, or query_encoder/ + passage_encoder/), or
               zero-shot with one sentence-transformers model (its own pooling and normalisation, e.g. mpnet)
  dpr:DIR      the same for a passage-level (DPR) trainer output: the model says to index passages unsplit
  dcsr-zero-int8, dcsr-int8:DIR, dpr-int8:DIR   the same towers encoding with quantize="int8" (index and queries)
  hybrid:A+B   score fusion of two systems above: 0.5 * min-max HasAns/score(A) + 0.5 * min-max BM25(B)
  hybrid-hasans:A+B   the same with HasAns kept as a probability (the README's earlier hybrid rows)
  hybrid-rrf:A+B      reciprocal rank fusion of the two, as Haystack's JoinDocuments(join_mode="reciprocal_rank_fusion")
  rerank:BASE+DIR[@N]  a cross-encoder (a train-cross-encoder output) over BASE's top N (default 20): BASE's
               rankings and candidate scores with their first N reordered (benchmarks/lib/cross_encoder_rerank.py)
  rerank-blend:BASE+DIR[@N]  the same, the N ordered by 0.5 * min-max CE + 0.5 * min-max BASE
  ranked:FILE  a system ranked on another machine: a GPU run's NAME.ranked.json.xz (its towers'
               served rankings of these questions and contrast pairs, candidate scores, MEQ ranking report)
A hybrid gets the MEQ ranking (MR/MRR among the 50 candidates) when both of its systems scored the
candidates in this workdir (their caches keep the scores): the same fusion over the candidates' scores.

Resumable: each system's ranking is cached under --workdir and reused while the question set and
the model's files are the same (after changing a model-free kind's code, delete its cache file).
Systems already in --out for the same questions are kept, so a later run can add systems; their
per-question first-hit ranks (``*.first_hits.json``), MEQ ranks and "own gold first" outcomes let
``squad_open.py paired REPORT --pair A B`` test any two systems of the report (``lib/paired_tests.py``). Writes
JSON, a Markdown table and an SVG plot.

    .venv/bin/python benchmarks/squad_open.py --questions 1000 \\
        --system BM25=bm25 --system "DCSR-ft=dcsr:runs/cpu_dcsr/last" --system "DPR-ft=dpr:runs/cpu_dpr/last"
"""

import argparse
import hashlib
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, NamedTuple, Tuple

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "benchmarks" / d) for d in ("lib", ".")]

import numpy as np  # noqa: E402
from cross_encoder_rerank import (  # noqa: E402
    PairScores,
    PairsToScore,
    directory_fingerprint,
    rerank_candidates,
    rerank_rankings,
)
from evaluation import (  # noqa: E402
    DEPTH,
    KS,
    Ranked,
    candidate_scores,
    fuse_candidate_scores,
    fuse_rankings,
    load_contrast_set,
    markdown_table,
    pair_report,
    question_word_table,
    ranking_report,
    retrieval_report,
)
from haystack.nodes import BM25Retriever, EmbeddingRetriever  # noqa: E402
from haystack.schema import Document  # noqa: E402
from plot import accuracy_svg  # noqa: E402
from squad_data import DATA, faiss_store, load_squad  # noqa: E402

from haystack_dcsr import DCSRRetriever, SentencePreprocessor, SparseBM25DocumentStore  # noqa: E402
from haystack_dcsr.core.model.dcsr_model import ModelFiles  # noqa: E402
from haystack_dcsr.core.model.int8 import QUANTIZE_MODES  # noqa: E402
from haystack_dcsr.core.model.models import DEFAULT_MODEL, resolve_model_path  # noqa: E402
from haystack_dcsr.core.ranking.hasans import hasans_of_key, score_passages  # noqa: E402

FUSION_OF_KIND = {"hybrid": "min-max", "hybrid-hasans": "hasans-as-is", "hybrid-rrf": "rrf"}  # evaluation.FusionMode
INT8 = "-int8"  # a DCSR kind's suffix: its towers encode with quantize="int8"
DEFAULT_SYSTEMS = [  # the README's zero-shot rows on the 1,000-question sample, the hybrid among them
    "BM25=bm25",
    "EmbeddingRetriever zero-shot=er",
    "DCSR zero-shot=dcsr-zero",
    "Hybrid DCSR zero-shot + BM25=hybrid:DCSR zero-shot+BM25",
]


def copies(passages: List[Document]) -> List[Document]:
    return [Document(content=d.content, id=d.id, meta=dict(d.meta)) for d in passages]


def model_width(model: str) -> int:
    """The vector width of a model directory or name (its query tower's ``hidden_size``), without loading it."""
    query_dir = ModelFiles.locate(model).query_dir
    return json.loads((Path(query_dir) / "config.json").read_text())["hidden_size"]


class System:
    """One indexed system: answers questions (top-100) and scores fixed candidate sets."""

    def __init__(self, kind: str, target: str, passages: List[Document], workdir: Path):
        quantize = "int8" if kind.endswith(INT8) else None
        kind = self.kind = kind.removesuffix(INT8)
        if quantize and kind not in ("dcsr-zero", "dcsr", "dpr"):
            raise ValueError(f"{kind}{INT8}: only the DCSR kinds have towers to quantise")
        self.store, self.retriever = None, None
        if kind == "bm25":
            self.store = SparseBM25DocumentStore(progress_bar=False)
            self.store.write_documents(copies(passages))
            self.retriever = BM25Retriever(document_store=self.store, scale_score=False)
        elif kind == "er":
            model = target or resolve_model_path("all-MiniLM-L6-v2")
            self.store = faiss_store(workdir / "er.db", model_width(model))
            self.retriever = EmbeddingRetriever(
                embedding_model=model,
                document_store=self.store,
                use_gpu=False,
                progress_bar=False,
                model_format="sentence_transformers",
            )
            self.store.write_documents(copies(passages))
            self.store.update_embeddings(self.retriever)
        elif kind in ("dcsr-zero", "dcsr", "dpr"):
            self.store = faiss_store(workdir / f"{kind}.db", model_width(target or DEFAULT_MODEL))
            if kind == "dcsr-zero":
                self.retriever = DCSRRetriever(
                    document_store=self.store, pooling="mean", use_gpu=False, progress_bar=False, quantize=quantize
                )
            else:  # a trainer output is a DCSRModel directory: towers, level and splitter settings in one
                self.retriever = DCSRRetriever(
                    document_store=self.store, model=target, use_gpu=False, progress_bar=False, quantize=quantize
                )
            model = target if kind in ("dcsr", "dpr") else None
            units = SentencePreprocessor(model=model, progress_bar=False).process(passages)
            self.store.write_documents(units["documents"])
            self.store.update_embeddings(self.retriever)
        else:
            raise ValueError(f"Unknown system kind {kind!r}")
        self._vectors: Dict[str, np.ndarray] = {}
        self._vector_ids: Dict[int, str] = {}

    def answer(self, texts: List[str]) -> Ranked:
        if self.kind == "er":
            return self._answer_er(texts)
        results = []
        for offset in range(0, len(texts), 256):
            results.extend(self.retriever.retrieve_batch(texts[offset : offset + 256], top_k=DEPTH))
        return [[(d.id, float(d.score)) for d in docs] for docs in results]

    def _answer_er(self, texts: List[str]) -> Ranked:
        """EmbeddingRetriever's ranking read from its FAISS index directly: Haystack's FAISS store
        fetches every query's top-100 through SQLite (~0.8 s a question here, 2.3 h for SQuAD dev).
        Same query vectors, same index, same order; checked against ``retrieve_batch`` on a sample."""
        if not self._vector_ids:
            self._vector_ids = {
                int(d.meta["vector_id"]): d.id for d in self.store.get_all_documents_generator(return_embedding=False)
            }
        index = self.store.faiss_indexes[self.store.index]
        ranked: Ranked = []
        for offset in range(0, len(texts), 256):
            scores, ids = index.search(self.query_vectors(texts[offset : offset + 256]), DEPTH)
            ranked.extend(
                [(self._vector_ids[int(v)], float(x)) for v, x in zip(row_ids, row_scores) if v != -1]
                for row_ids, row_scores in zip(ids, scores)
            )
        sample = texts[:8]
        via_haystack = [[d.id for d in docs] for docs in self.retriever.retrieve_batch(sample, top_k=DEPTH)]
        if via_haystack != [[pid for pid, _ in r] for r in ranked[:8]]:
            raise RuntimeError("direct FAISS ranking differs from EmbeddingRetriever.retrieve_batch")
        return ranked

    def query_vectors(self, texts: List[str]) -> np.ndarray:
        return np.asarray(self.retriever.embed_queries(texts), dtype=np.float32)

    def _passage_vectors(self) -> Dict[str, np.ndarray]:
        """Every passage's indexed vectors (one per sentence for DCSR), read back from the store."""
        if not self._vectors:
            grouped: Dict[str, list] = {}
            for doc in self.store.get_all_documents_generator(return_embedding=True, batch_size=10_000):
                passage_id = doc.meta["dcsr"]["passage_id"] if "dcsr" in doc.meta else doc.id
                grouped.setdefault(passage_id, []).append(doc.embedding)
            self._vectors = {pid: np.asarray(vs, dtype=np.float32) for pid, vs in grouped.items()}
        return self._vectors

    def served(self, scores: np.ndarray) -> np.ndarray:
        """Candidate scores on the scale the retriever serves and a hybrid fuses: HasAns as a
        probability for the DCSR kinds (``score_candidates`` ranks by its log-space key)."""
        return scores if self.kind in ("bm25", "er") else hasans_of_key(scores)

    def score_candidates(self, question: str, candidates: List[str]) -> np.ndarray:
        """Scores of fixed candidate passages: BM25; dot product (ER); HasAns over all the
        candidates' sentences (DCSR, ranked by its log-space key)."""
        if self.kind == "bm25":
            return self.store.score_documents(question, candidates)
        query = self.query_vectors([question])[0]
        vectors = self._passage_vectors()
        if self.kind == "er":
            return np.array([float(vectors[c][0] @ query) for c in candidates])
        return score_passages(query, [vectors[c] for c in candidates], self.retriever.hasans_temperature)


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """The corpus, questions, contrast set and cache: shared with the scripts that read the cache."""
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--questions", type=int, default=1000, help="dev questions (0 = all 10,570)")
    parser.add_argument("--passages", type=int, default=10**9, help="corpus size (default: all 20,963)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--contrast-set",
        type=Path,
        default=Path("data/meq_dev"),
        help="output of `python -m haystack_dcsr.training build-contrast-set` (skipped when missing)",
    )
    parser.add_argument("--contrast-limit", type=int, default=0, help="first N pairs only (quick runs)")
    parser.add_argument("--workdir", type=Path, default=Path("benchmarks/cache/squad_open"))


class Benchmark(NamedTuple):
    passages: List[Document]
    questions: list
    texts: Dict[str, str]
    pairs: List[Dict]
    ranking: List[Dict]
    fingerprint: str  # of questions, corpus and pairs: a cached ranking is reused only for the same ones

    def cache_file(self, workdir: Path, spec: str) -> Path:
        """A system's cached ranking: keyed by the data, the spec and the model's files, so a model
        retrained into the same directory is measured again instead of read from the old cache."""
        key = spec + model_fingerprint(spec)
        return workdir / f"{self.fingerprint}-{hashlib.sha1(key.encode()).hexdigest()[:10]}.json"


def parse_system(spec: str) -> Tuple[str, str, str]:
    """``NAME=KIND[:TARGET]`` -> (name, kind, target); target is "" for kinds without one."""
    name, _, rest = spec.partition("=")
    kind, _, target = rest.partition(":")
    return name, kind, target


def model_fingerprint(spec: str) -> str:
    """A hash of every file under the model directory of a ``NAME=dcsr:DIR`` / ``dpr:DIR`` spec ("" for
    the kinds without one: after changing their code, delete their cache file)."""
    _, kind, target = parse_system(spec)
    if kind.removesuffix(INT8) not in ("dcsr", "dpr") or not target:
        return ""
    root = Path(target)
    if not root.is_dir():
        raise SystemExit(f"{spec!r}: no model directory {root}")
    return "@" + directory_fingerprint(root)


def parse_rerank(target: str) -> Tuple[str, Path, int]:
    """``BASE+DIR[@N]`` -> (base system name, cross-encoder directory, N); a base name may hold "+"."""
    rest, at, top = target.rpartition("@")
    if not at or not top.isdigit():
        rest, top = target, "20"
    base, plus, model_dir = rest.rpartition("+")
    if not plus or not base or int(top) < 1:
        raise SystemExit(f"rerank:{target!r}: expected rerank:BASE+MODEL_DIR[@N], N >= 1")
    return base, Path(model_dir), int(top)


def read_ranked(path: Path, questions: list, contrast_questions: List[str], texts: Dict[str, str]) -> Dict:
    """A ``ranked:FILE`` system, checked against this benchmark: the same questions in the same order
    (or, for a sample of them, ``--questions N``, each of them, its rows picked by question text), the
    same contrast questions, and passage ids of this corpus (a file of another question set or a smoke
    run is refused, naming what differs)."""
    import lzma

    with lzma.open(path, "rt", encoding="utf-8") as handle:
        ranked = json.load(handle)
    asked = [q for q, _, _ in questions]
    if len(asked) < len(ranked.get("questions", [])):
        row_of = {}
        for row, question in enumerate(ranked["questions"]):
            row_of.setdefault(question, row)
        missing = [q for q in asked if q not in row_of]
        if missing:
            raise ValueError(f"{path}: {len(missing)} of this benchmark's questions are not in it, e.g. {missing[0]!r}")
        ranked["ranked"] = [ranked["ranked"][row_of[q]] for q in asked]
        ranked["questions"] = asked
    for key, expected in (("questions", asked), ("contrast_questions", contrast_questions)):
        got = ranked.get(key, [])
        if got != expected:
            at = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
            raise ValueError(
                f"{path}: its {len(got)} {key} are not this benchmark's {len(expected)} (first difference at {at})"
            )
    unknown = {
        pid for rows in (ranked["ranked"], ranked.get("contrast_ranked", [])) for row in rows for pid, _ in row
    } - set(texts)
    if unknown:
        raise ValueError(f"{path}: {len(unknown)} passage ids are not in this corpus, e.g. {sorted(unknown)[:3]}")
    return ranked


def load_benchmark(args: argparse.Namespace) -> Benchmark:
    pairs, ranking = load_contrast_set(args.contrast_set, args.contrast_limit)
    if not pairs:
        print(f"no contrast set in {args.contrast_set}: MEQ metrics skipped", flush=True)
    needed = {pid for row in ranking for pid in row["candidates"]} | {p[g] for p in pairs for g in ("gold", "meq_gold")}
    passages, questions = load_squad(args.data, args.passages, args.questions, args.seed, keep=needed)
    texts = {d.id: d.content for d in passages}
    return Benchmark(passages, questions, texts, pairs, ranking, benchmark_fingerprint(questions, texts, pairs))


def benchmark_fingerprint(questions: list, texts: Dict[str, str], pairs: List[Dict]) -> str:
    """What a cached ranking or a report row was measured on: questions, passage ids and contrast pairs.

    A pair's MiniLM cosine is left out: no metric reads it, and float rounding moves its last digits
    between machines, which would otherwise orphan every system measured on another one."""
    evaluated = [{k: v for k, v in pair.items() if k != "cosine"} for pair in pairs]
    return hashlib.sha1(json.dumps([questions, sorted(texts), evaluated]).encode()).hexdigest()[:12]


def exit_on_sigterm() -> None:
    """``kill`` (SIGTERM) ends the run as Ctrl-C does, through ``with`` blocks: a stopped indexing otherwise
    left its scratch FAISS store (64 MB for all of SQuAD) under the workdir."""

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def main() -> None:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_arguments(parser)
    parser.add_argument("--system", action="append", help="NAME=KIND[:DIR] (repeatable); see the module doc")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/squad_open_zero_shot.json"))
    parser.add_argument(
        "--pairs-to-score",
        type=Path,
        help="write the (question, passage) pairs the rerank rows need to this .jsonl.xz instead of scoring them "
        "and reporting those rows: for a cross-encoder trained and run elsewhere (a GPU run)",
    )
    parser.add_argument(
        "--rerank-quantize",
        choices=QUANTIZE_MODES,
        help="score every rerank row's pairs as CrossEncoder(quantize=...) does (int8: ~2x faster on a CPU; "
        "kept apart from the fp32 scores of the same model)",
    )
    args = parser.parse_args()
    collector = PairsToScore() if args.pairs_to_score else None

    bench = load_benchmark(args)
    passages, questions, texts, pairs, ranking, fingerprint = bench
    args.workdir.mkdir(parents=True, exist_ok=True)
    report = json.loads(args.out.read_text()) if args.out.is_file() else {}
    ranks_file = args.out.with_suffix(".first_hits.json")  # per-question ranks: paired tests across runs
    first_hits: Dict[str, List[int]] = json.loads(ranks_file.read_text()) if ranks_file.is_file() else {}
    if report.get("fingerprint") != fingerprint:
        report, first_hits = {"fingerprint": fingerprint, "systems": {}}, {}
    report.update(
        command=" ".join([Path(sys.executable).name] + sys.argv), passages=len(passages), questions=len(questions)
    )
    contrast_questions = list(dict.fromkeys(q for p in pairs for q in (p["question"], p["meq"])))
    report["contrast_set"] = {"path": str(args.contrast_set), "pairs": len(pairs)} if pairs else None
    rankings: Dict[str, Ranked] = {}
    contrast_rankings: Dict[str, Ranked] = {}
    served_scores: Dict[str, List[List[float]]] = {}  # per system: the ranking rows' candidate scores
    for spec in args.system or DEFAULT_SYSTEMS:
        name, kind, target = parse_system(spec)
        cache = bench.cache_file(args.workdir, spec)
        stored = None  # rankings measured before (this workdir's cache) or on another machine (ranked:FILE)
        if kind == "ranked":
            stored = {"timing": {"ranked_file": target}, "contrast_ranked": [], "ranking": {}}
            stored.update(read_ranked(Path(target), questions, contrast_questions if pairs else [], texts))
        elif cache.is_file():
            stored = json.loads(cache.read_text())
            print(f"{name}: cached ({cache})", flush=True)
        if stored is not None:
            rankings[name], contrast_rankings[name] = stored["ranked"], stored["contrast_ranked"]
            timing, ranking_result = stored["timing"], stored["ranking"]
            if "candidate_scores" in stored:
                served_scores[name] = stored["candidate_scores"]
        elif kind in FUSION_OF_KIND:
            dense, _, sparse = target.rpartition("+")  # a dense name may hold "+" (DCSR+QQ)
            how = {"mode": FUSION_OF_KIND[kind]}
            start = time.perf_counter()
            rankings[name] = fuse_rankings(rankings[dense], rankings[sparse], **how)
            contrast_rankings[name] = fuse_rankings(contrast_rankings[dense], contrast_rankings[sparse], **how)
            timing, ranking_result = {"fuse_s": time.perf_counter() - start}, {}
            if pairs and dense in served_scores and sparse in served_scores:
                fused = fuse_candidate_scores(served_scores[dense], served_scores[sparse], ranking, **how)
                ranking_result = ranking_report(fused, ranking, pairs)
                served_scores[name] = [f.tolist() for f in fused]
        elif kind in ("rerank", "rerank-blend"):
            base, model_dir, top_n = parse_rerank(target)
            if base not in rankings:
                raise SystemExit(f"{spec!r}: list the base system {base!r} before it")
            scorer = collector or PairScores(model_dir, texts, args.workdir, quantize=args.rerank_quantize)
            cached = len(scorer.scores)
            start = time.perf_counter()  # the contrast set first: its few thousand pairs report early
            blend = kind == "rerank-blend"
            contrast_rankings[name] = rerank_rankings(contrast_questions, contrast_rankings[base], scorer, top_n, blend)
            ranking_result = {}
            if pairs and base in served_scores:
                reranked = rerank_candidates(ranking, served_scores[base], scorer, top_n, blend)
                ranking_result = ranking_report(reranked, ranking, pairs)
                served_scores[name] = [r.tolist() for r in reranked]
                if not collector:
                    print(
                        f"{name}: MEQ ranking MRR q {ranking_result['ranking_q']['MRR']:.3f}, "
                        f"q' {ranking_result['ranking_meq']['MRR']:.3f}",
                        flush=True,
                    )
            rankings[name] = rerank_rankings([q for q, _, _ in questions], rankings[base], scorer, top_n, blend)
            timing = {
                "rerank_s": time.perf_counter() - start,
                "rerank_top": top_n,
                "pairs_scored": len(scorer.scores) - cached,
                "pairs_cached": cached,
            }
            if collector:
                continue
        else:
            print(f"{name}: indexing {len(passages)} passages", flush=True)
            with tempfile.TemporaryDirectory(dir=args.workdir) as scratch:
                start = time.perf_counter()
                system = System(kind, target, passages, Path(scratch))
                timing = {"index_s": time.perf_counter() - start}
                start = time.perf_counter()
                rankings[name] = system.answer([q for q, _, _ in questions])
                timing["query_ms_per_question"] = 1000 * (time.perf_counter() - start) / max(len(questions), 1)
                start = time.perf_counter()
                contrast_rankings[name] = system.answer(contrast_questions) if pairs else []
                embed = system.query_vectors if kind != "bm25" else None
                scores = candidate_scores(system.score_candidates, ranking)
                ranking_result = ranking_report(scores, ranking, pairs, embed) if pairs else {}
                served_scores[name] = [system.served(s).tolist() for s in scores]
                timing["contrast_s"] = time.perf_counter() - start
                del system
            cache.write_text(
                json.dumps(
                    {
                        "spec": spec,
                        "ranked": rankings[name],
                        "timing": timing,
                        "contrast_ranked": contrast_rankings[name],
                        "ranking": ranking_result,
                        "candidate_scores": served_scores[name],
                    }
                )
            )
        scored = retrieval_report(rankings[name], questions, texts)
        first_hits[name] = scored["ranks"]
        result = {
            "spec": spec,
            "timing": timing,
            "top_k": scored["top_k"],
            "by_question_word": scored["by_question_word"],
        }
        if pairs:
            result["contrast"] = {
                **ranking_result,
                **pair_report(dict(zip(contrast_questions, contrast_rankings[name])), pairs, texts),
            }
        report["systems"][name] = result
        print(f"{name}: {json.dumps(result)}", flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1))
        ranks_file.write_text(json.dumps(first_hits))
    if collector:
        print(f"{collector.write(args.pairs_to_score)} pairs to score -> {args.pairs_to_score}")
        return
    # paired tests are derived on demand (squad_open.py paired): over every pair they grew quadratically
    for stale in ("paired", "ranking_paired", "own_gold_paired"):
        report.pop(stale, None)
    args.out.write_text(json.dumps(report, indent=1))
    table = markdown_table(report) + "\n\n" + question_word_table(report)
    table += f"\n\nPaired tests between any two systems: `python benchmarks/squad_open.py paired {args.out} --pair A B`"
    args.out.with_suffix(".md").write_text(table + "\n")
    args.out.with_suffix(".svg").write_text(
        accuracy_svg(
            {name: [100 * r["top_k"][str(k)] for k in KS] for name, r in report["systems"].items()},
            KS,
            title=f"SQuAD-open, {report['questions']} dev questions, {report['passages']} passages",
        )
    )
    print(table)


if __name__ == "__main__":
    if sys.argv[1:2] == ["paired"]:  # paired tests between systems of a report: lib/paired_tests.py
        import runpy

        sys.argv = ["squad_open.py paired", *sys.argv[2:]]
        runpy.run_path(str(Path(__file__).resolve().parent / "lib" / "paired_tests.py"), run_name="__main__")
    else:
        main()
