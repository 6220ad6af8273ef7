"""The Haystack 1.x sentence engine behind ``DCSRRetriever``: top-N sentence search over a document store (FAISS
read directly through its vector map, SQL for the passages; any other store through ``query_by_embedding``), the
ranking driver's 1.x side, passages written and deleted whole, the read/write guard, and FAISS stores saved and
loaded crash-safe. The nodes in ``haystack1/`` use it; users meet it only through them."""
