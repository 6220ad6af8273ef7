"""The Haystack 1.x (``farm-haystack``) adapter: the nodes (``DCSRRetriever``, ``SentencePreprocessor``,
``QueryEncoder``, ``HybridJoin``, ``CrossEncoderRanker``, the sparse BM25 store), ``MilvusDocumentStore``, saving and
loading pipelines, the REST server, and one engine (``engine/``: the SQL + FAISS sentence engine behind the
retriever). ``haystack_dcsr/__init__`` imports the nodes from here when
farm-haystack is installed, which registers them for YAML pipelines."""
