"""haystack-dcsr: sentence-aware dense retrieval (DCSR) and MEQ-aware query encoders for Haystack 1.x.

Importing the package registers its nodes with Haystack, so YAML pipelines can name them
(``type: DCSRRetriever``, ``type: SentencePreprocessor``, ``type: QueryEncoder``, ``type: HybridJoin``,
``type: SparseBM25DocumentStore``).
"""
from haystack_dcsr.bm25 import SparseBM25DocumentStore
from haystack_dcsr.hasans import hasans_scores, sentence_probabilities
from haystack_dcsr.hybrid import HybridJoin
from haystack_dcsr.index_presets import INDEX_PRESETS, IndexPreset
from haystack_dcsr.pipelines import load_pipeline, save_pipeline
from haystack_dcsr.preprocessor import SentencePreprocessor
from haystack_dcsr.query_encoder import QueryEncoder
from haystack_dcsr.retriever import DCSRRetriever
from haystack_dcsr.splitting import SentenceSplitter

__all__ = [
    "DCSRRetriever",
    "HybridJoin",
    "INDEX_PRESETS",
    "IndexPreset",
    "QueryEncoder",
    "SentencePreprocessor",
    "SentenceSplitter",
    "SparseBM25DocumentStore",
    "hasans_scores",
    "load_pipeline",
    "save_pipeline",
    "sentence_probabilities",
]
__version__ = "0.1.0"
