"""What a FAISS store promises and what it refuses by name: it serves DCSR from one process with its database
in SQLite (saved with the index); over a database server, shared by processes and restarting on its own, the
retriever is refused before anything is read or written, naming the engines made for that."""

import pytest
from haystack.document_stores import FAISSDocumentStore
from postgres import new_database_url

from haystack_dcsr import DCSRRetriever


def test_a_faiss_store_over_a_database_server_is_refused_naming_the_server_engines(tiny_bert):
    url = new_database_url("refused")
    store = FAISSDocumentStore(sql_url=url, embedding_dim=32, faiss_index_factory_str="Flat", progress_bar=False)
    with pytest.raises(ValueError) as refused:
        DCSRRetriever(document_store=store, query_model=tiny_bert, progress_bar=False)
    message = str(refused.value)
    assert "over a postgresql database" in message and url.rsplit("/", 1)[1] in message
    assert "DCSRMilvusDocumentStore" in message and "PgvectorDocumentStore" in message
    assert store.get_document_count() == 0  # nothing written
