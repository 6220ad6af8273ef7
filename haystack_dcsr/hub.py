"""The import path that model directories saved before the core moved to ``haystack_dcsr.core`` name in their
``modules.json`` (``haystack_dcsr.hub.NotSentenceTransformers``): kept so that those directories load unchanged."""

from haystack_dcsr.core.hub import NotSentenceTransformers  # noqa: F401
