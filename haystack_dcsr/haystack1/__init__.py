"""The Haystack 1.x (``farm-haystack``) adapter: the nodes (``DCSRRetriever``, ``SentencePreprocessor``,
``QueryEncoder``, ``HybridJoin``, ``CrossEncoderRanker``), the sparse BM25 store, the SQL + FAISS sentence engine
(``sentence_search``, ``sentence_map``, ``sql_rows``, passage writes and deletion, the store guard), saving and
loading stores and pipelines, and the REST server. ``haystack_dcsr/__init__`` imports the nodes from here when
farm-haystack is installed, which registers them for YAML pipelines."""
