"""The stable import path that model directories name in their ``modules.json``
(``haystack_dcsr.hub.NotSentenceTransformers``, written by ``core.model.hub``): kept at the top so that saved
directories load unchanged wherever the core's rooms move."""

from haystack_dcsr.core.model.hub import NotSentenceTransformers  # noqa: F401
