"""Indexes: the exact index, FAISS search, the Milvus index and its filters, index presets, filters, sparse BM25."""
