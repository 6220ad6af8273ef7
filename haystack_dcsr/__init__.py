"""haystack-dcsr: sentence-aware dense retrieval (DCSR) and MEQ-aware query encoders for Haystack.

The core (``DCSRModel``, towers, splitting, HasAns, fusion, metrics) imports no Haystack. With
Haystack 1.x (``farm-haystack``) installed, importing the package also registers its 1.x nodes, so
YAML pipelines can name them (``type: DCSRRetriever``, ``type: SentencePreprocessor``,
``type: QueryEncoder``, ``type: HybridJoin``, ``type: SparseBM25DocumentStore``, ``type: MilvusDocumentStore``).
With Haystack 2.x
(``haystack-ai``) the components live in ``haystack_dcsr.haystack2``.
"""

from importlib import metadata

from haystack_dcsr.core.indexes.index_presets import INDEX_PRESETS, MILVUS_PRESETS, IndexPreset, MilvusPreset
from haystack_dcsr.core.model.dcsr_model import DCSRModel
from haystack_dcsr.core.model.model_settings import DCSRSettings
from haystack_dcsr.core.ranking.hasans import hasans_scores, sentence_probabilities
from haystack_dcsr.core.text.splitting import SentenceSplitter

__all__ = [
    "DCSRModel",
    "DCSRSettings",
    "INDEX_PRESETS",
    "IndexPreset",
    "MILVUS_PRESETS",
    "MilvusPreset",
    "SentenceSplitter",
    "hasans_scores",
    "sentence_probabilities",
]
__version__ = "0.2.0"


def _haystack_1_installed() -> bool:
    try:
        metadata.version("farm-haystack")
    except metadata.PackageNotFoundError:
        return False
    return True


if _haystack_1_installed():
    from haystack_dcsr.haystack1.bm25 import SparseBM25DocumentStore
    from haystack_dcsr.haystack1.engine.saved_store import load_faiss_store, save_faiss_store
    from haystack_dcsr.haystack1.hybrid import HybridJoin
    from haystack_dcsr.haystack1.milvus_store import MilvusDocumentStore
    from haystack_dcsr.haystack1.pipelines import load_pipeline, save_pipeline
    from haystack_dcsr.haystack1.preprocessor import SentencePreprocessor
    from haystack_dcsr.haystack1.query_encoder import QueryEncoder
    from haystack_dcsr.haystack1.reranker import CrossEncoderRanker
    from haystack_dcsr.haystack1.retriever import DCSRRetriever

    __all__ += [
        "CrossEncoderRanker",
        "DCSRRetriever",
        "HybridJoin",
        "MilvusDocumentStore",
        "QueryEncoder",
        "SentencePreprocessor",
        "SparseBM25DocumentStore",
        "load_faiss_store",
        "load_pipeline",
        "save_faiss_store",
        "save_pipeline",
    ]
