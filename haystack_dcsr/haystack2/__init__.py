"""DCSR for Haystack 2.x (``haystack-ai``): components over the same model and index layout as the 1.x nodes.

    indexing:  DCSRSentenceSplitter -> DCSRDocumentEmbedder -> DocumentWriter(sentence store)
    querying:  DCSRRetriever(sentence store) [-> DCSRHybridJoiner with a BM25 retriever over passages]
               [-> DCSRCrossEncoderRanker]
               (DCSRRetriever = DCSRTextEmbedder -> DCSREmbeddingRetriever, the integrations' split, in one)
               [-> DCSRAnswerSentenceMarker: the sentence of each passage that best answers, scored alone]

Sentence stores: ``InMemoryDocumentStore``, Qdrant (``qdrant-haystack``), Milvus (``DCSRMilvusDocumentStore``, the
layout the 1.x ``MilvusDocumentStore`` writes; or ``milvus-haystack``'s store); see ``stores``.

Haystack 3 loads YAML only from allow-listed modules; importing this package allow-lists its own
components (and nothing else), as Haystack does for ``haystack_integrations``, so
``Pipeline.loads`` works for DCSR pipelines without ``unsafe=True``.
"""

from haystack_dcsr.haystack2.embedder import DCSRDocumentEmbedder
from haystack_dcsr.haystack2.evidence import DCSRAnswerSentenceMarker
from haystack_dcsr.haystack2.joiner import DCSRHybridJoiner
from haystack_dcsr.haystack2.milvus_store import DCSRMilvusDocumentStore
from haystack_dcsr.haystack2.ranker import DCSRCrossEncoderRanker
from haystack_dcsr.haystack2.retriever import DCSREmbeddingRetriever, DCSRRetriever, DCSRTextEmbedder
from haystack_dcsr.haystack2.splitter import DCSRSentenceSplitter

__all__ = [
    "DCSRAnswerSentenceMarker",
    "DCSRCrossEncoderRanker",
    "DCSRDocumentEmbedder",
    "DCSREmbeddingRetriever",
    "DCSRHybridJoiner",
    "DCSRMilvusDocumentStore",
    "DCSRRetriever",
    "DCSRSentenceSplitter",
    "DCSRTextEmbedder",
]

try:  # Haystack >= 3: YAML loading is gated by a module allowlist
    from haystack.core.serialization_security import allow_deserialization_module

    allow_deserialization_module(__name__)
except ImportError:  # Haystack 2.x: no allowlist
    pass
