"""Measured FAISS settings for DCSR's sentence index (``INDEX_PRESETS``), and the Milvus index kinds beside them
(``MILVUS_PRESETS``): pick one by corpus size and memory.

    preset = INDEX_PRESETS["fast"]
    store = FAISSDocumentStore(sql_url="sqlite:///dcsr.db", embedding_dim=384, **preset.store_params)
    retriever = DCSRRetriever(document_store=store, **preset.retriever_params)
    store.write_documents(SentencePreprocessor().process(passages)["documents"])
    retriever.train_index()                # only for presets that need training (SQ, IVF, PQ)
    store.update_embeddings(retriever)

Each preset comes from the ANN study and the cost-growth runs (20k, 200k and 1M passages) in
``docs/benchmarks/scale.md``; how to choose: ``docs/guides/index-presets.md``. Bytes are per passage
(~4.9 sentence vectors).
"""

import dataclasses
from typing import Dict


@dataclasses.dataclass(frozen=True)
class IndexPreset:
    factory: str  # FAISSDocumentStore(faiss_index_factory_str=...)
    search_params: Dict[str, float]  # DCSRRetriever(search_params=...)
    top_n_sentences: int
    use: str

    @property
    def store_params(self) -> Dict:
        return {"faiss_index_factory_str": self.factory, "similarity": "dot_product"}

    @property
    def retriever_params(self) -> Dict:
        return {"search_params": dict(self.search_params), "top_n_sentences": self.top_n_sentences}

    def needs_training(self, dim: int = 384) -> bool:
        """Whether ``DCSRRetriever.train_index`` must run before vectors are added."""
        import faiss

        return not faiss.index_factory(dim, self.factory, faiss.METRIC_INNER_PRODUCT).is_trained


INDEX_PRESETS: Dict[str, IndexPreset] = {
    "exact": IndexPreset(
        "Flat", {}, 1000, "the reference: exact scores, ~7.6 KB a passage, a scan per query; up to ~100k passages"
    ),
    "fast": IndexPreset(
        "HNSW32",
        {"efSearch": 1000},
        1000,
        "lowest latency at no measured loss; ~8.9 KB a passage (vectors + graph in RAM); up to ~1M passages",
    ),
    "compact": IndexPreset(
        "SQ4",
        {},
        1000,
        "4-bit codes, 947 B a passage (below a passage retriever's fp32 vector); "
        "a scan per query; up to ~200k passages",
    ),
    "million": IndexPreset(
        "HNSW32,SQ8",
        {"efSearch": 1000},
        1000,
        "8-bit codes in an HNSW graph, ~3.2 KB a passage "
        "(a third of HNSW32's); no loss at 20k and 200k "
        "passages; at 1M p50 under 50 ms in a 4.6 GiB process",
    ),
}


@dataclasses.dataclass(frozen=True)
class MilvusPreset:
    """A Milvus vector index for ``MilvusDocumentStore(index_preset=...)`` / ``MilvusSentenceIndex(preset=...)``."""

    index_type: str
    build_params: Dict[str, int]  # the index's build parameters
    search_params: Dict[str, int]  # per query; "ef" follows top_n (HNSW's ef must be at least k)
    top_n_sentences: int  # sentences a query asks the server for (the retriever's setting)
    use: str

    @property
    def retriever_params(self) -> Dict:
        """``DCSRRetriever(document_store=store, **preset.retriever_params)``, as for ``INDEX_PRESETS``."""
        return {"top_n_sentences": self.top_n_sentences}


# Measured on default servers (docs/benchmarks/engines.md): flat at top_n 1,000 gave exact's top-1 for every question
# at 1.22x FAISS exact's p50 at 20,963 passages and 1.17x at 200,000; hnsw (built) at top_n 300 answered at 1.16x
# FAISS million's p50 at 200,000 passages with exact's top-1 for 299 of 300 questions; ivf_sq8 lost 4% of top-1s.
MILVUS_PRESETS: Dict[str, MilvusPreset] = {
    "flat": MilvusPreset("FLAT", {}, {}, 1000, "exact scores on the server; the reference, like FAISS exact"),
    "hnsw": MilvusPreset(
        "HNSW",
        {"M": 16, "efConstruction": 100},
        {},
        300,
        "a graph index on the server (ef = top_n per query): the fast preset, once built (wait_until_indexed); "
        "at 200k passages 1.16x FAISS million's p50, exact's top-1",
    ),
    "ivf_sq8": MilvusPreset(
        "IVF_SQ8",
        {"nlist": 1024},
        {"nprobe": 64},
        1000,
        "8-bit codes in 1,024 lists: the smallest on the server (0.75x flat's memory at 200k passages) but "
        "exact's top-1 for only 96% of questions",
    ),
}
