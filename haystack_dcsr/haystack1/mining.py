"""Haystack 1.x retrievers over a training corpus, for the trainer's miners (``training.mining.retriever_search``).

The standalone trainer mines with the core alone; these are the option for mining through Haystack:
``ElasticsearchDocumentStore`` (DPR's own BM25 setup) or a FAISS-backed ``DCSRRetriever``, the served
path. Passages are anything with ``key``, ``title`` and ``text`` (the trainer's ``Passage``).
"""

from typing import Iterable, Optional

from haystack.document_stores import KeywordDocumentStore
from haystack.nodes import BM25Retriever
from haystack.nodes.retriever import BaseRetriever
from haystack.schema import Document

from haystack_dcsr.haystack1.bm25 import SparseBM25DocumentStore


def bm25_retriever(
    passages: Iterable, elasticsearch_url: Optional[str] = None, index: str = "dcsr_bm25"
) -> BM25Retriever:
    """A ``BM25Retriever`` over ``passages``: Elasticsearch at ``elasticsearch_url`` (the index is
    re-created), else the embedded ``SparseBM25DocumentStore``."""
    documents = [Document(content=p.text, id=p.key, meta={"title": p.title}) for p in passages]
    if elasticsearch_url:
        from urllib.parse import urlparse

        from haystack.document_stores import ElasticsearchDocumentStore

        url = urlparse(elasticsearch_url)
        store: KeywordDocumentStore = ElasticsearchDocumentStore(
            host=url.hostname or "localhost",
            port=url.port or 9200,
            scheme=url.scheme or "http",
            username=url.username or "",
            password=url.password or "",
            index=index,
            recreate_index=True,
        )
    else:
        store = SparseBM25DocumentStore(index=index, progress_bar=False)
    store.write_documents(documents, index=index)
    return BM25Retriever(document_store=store, scale_score=False)


def faiss_dcsr_retriever(model_dir: str, passages: Iterable) -> BaseRetriever:
    """A ``DCSRRetriever`` of the model in ``model_dir`` over ``passages`` in an in-memory
    ``FAISSDocumentStore`` (Flat): the served path, for mining through the deployed stack."""
    from haystack.document_stores import FAISSDocumentStore

    from haystack_dcsr.haystack1.preprocessor import SentencePreprocessor
    from haystack_dcsr.haystack1.retriever import DCSRRetriever

    retriever = DCSRRetriever(model=str(model_dir))
    splitter = SentencePreprocessor(model=str(model_dir))
    splitter.progress_bar = False
    store = FAISSDocumentStore(
        sql_url="sqlite://",
        embedding_dim=retriever.embedding_dim,
        faiss_index_factory_str="Flat",
        duplicate_documents="skip",
        progress_bar=False,
    )
    retriever.document_store = store
    documents = [Document(content=p.text, id=p.key, meta={"title": p.title}) for p in passages]
    store.write_documents(splitter.process(documents)["documents"])
    store.update_embeddings(retriever)
    return retriever
