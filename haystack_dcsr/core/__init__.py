"""The framework-free core: the model directory (``DCSRModel``), the towers, the sentence splitter, HasAns, fusion,
metrics, int8 and the MEQ tools. Nothing here imports Haystack; both adapters and the trainer build on it."""

import sys as _sys

from haystack_dcsr.core.model import hub as _hub

# model directories saved between 2026-11-29 and 2026-12-05 name ``haystack_dcsr.core.hub.NotSentenceTransformers``
_sys.modules.setdefault("haystack_dcsr.core.hub", _hub)
