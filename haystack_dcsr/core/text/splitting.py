"""Offline sentence splitting with character spans.

DCSR needs *spans*, not just strings: a sentence vector is read at a marker placed before the
sentence inside the whole passage, and the passage must be rebuilt exactly from its sentences.
nltk's Punkt does the splitting; its data cannot be downloaded on offline machines, so the
splitter uses, in order: parameters the user fitted on their own corpus (``fit``), nltk's shipped
``punkt_tab`` model when it is installed, or a built-in list of English abbreviations.
"""

import json
import logging
import re
from pathlib import Path
from typing import Iterable, List, Optional, Tuple, Union

from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer, PunktTrainer

Span = Tuple[int, int]
logger = logging.getLogger(__name__)

# Lower-cased, without the final period, as Punkt stores them. Enough for encyclopaedic English;
# `SentenceSplitter.fit` learns the rest of a corpus' abbreviations.
ENGLISH_ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof rev gen col lt sgt capt cmdr adm gov sen rep pres st jr sr hon
    mt ft no nos vol vols pp p ch fig figs eq sec art op cit ed eds trans
    inc ltd co corp bros assn dept univ est approx ca cf vs etc al e.g i.e a.m p.m
    u.s u.k u.n u.s.a e.u d.c b.c a.d b.c.e c.e ph.d m.d b.a m.a b.sc m.sc
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun
    """.split()
)

# Sentence-final marks of scripts Punkt does not model (CJK, Devanagari, Arabic, Ethiopic).
_NON_LATIN_ENDINGS = re.compile(r"(?<=[。！？｡︒।॥؟።])\s*")


# The languages nltk ships Punkt models for (``punkt_tab``); offline, only English has built-in rules.
PUNKT_LANGUAGES = (
    "czech",
    "danish",
    "dutch",
    "english",
    "estonian",
    "finnish",
    "french",
    "german",
    "greek",
    "italian",
    "malayalam",
    "norwegian",
    "polish",
    "portuguese",
    "russian",
    "slovene",
    "spanish",
    "swedish",
    "turkish",
)


def default_punkt_parameters(language: str = "english") -> PunktParameters:
    """nltk's shipped model for ``language`` if installed, else the built-in English list (with a
    warning for other languages: their abbreviations and ordinals, e.g. German "am 3. Okt.", would
    split wrongly)."""
    if language not in PUNKT_LANGUAGES:
        raise ValueError(
            f"Unknown sentence-splitting language {language!r}: Punkt has models for {', '.join(PUNKT_LANGUAGES)}. "
            "For another language, fit the sentence splitter on your corpus (its fit(passages)), save it and "
            "pass punkt_params_path."
        )
    try:
        from nltk.tokenize.punkt import PunktTokenizer

        return PunktTokenizer(language)._params
    except (LookupError, ValueError, ImportError, OSError):
        if language != "english":
            logger.warning(
                "nltk's Punkt model for %r is not installed (offline: no punkt_tab data), so sentences are split with "
                "English rules, which cut %s abbreviations and ordinals. Install it (python -m nltk.downloader "
                "punkt_tab) or fit the sentence splitter on your corpus (language=%r, then its fit(passages)).",
                language,
                language.capitalize(),
                language,
            )
        params = PunktParameters()
        params.abbrev_types = set(ENGLISH_ABBREVIATIONS)
        return params


class SentenceSplitter:
    """Splits text into sentence spans that, with the whitespace between them, tile the text.

    :param language: nltk Punkt model to use when nltk's ``punkt_tab`` data is installed (one of
        ``PUNKT_LANGUAGES``); offline only English works out of the box, other languages warn.
    :param min_words: merge a sentence into the next until it has more than this many words.
        0 keeps true sentences; the DCSR reference code uses 8.
    :param params: Punkt parameters to use instead of the defaults (see ``fit``/``load``).
    """

    def __init__(self, language: str = "english", min_words: int = 0, params: Optional[PunktParameters] = None):
        if min_words < 0:
            raise ValueError(f"min_words must be >= 0, got {min_words}")
        self.language = language
        self.min_words = min_words
        self.params = params if params is not None else default_punkt_parameters(language)
        self._punkt = PunktSentenceTokenizer(self.params)

    @classmethod
    def configured(
        cls, language: str = "english", min_words: int = 0, params_path: Optional[Union[str, Path]] = None
    ) -> "SentenceSplitter":
        """Fitted Punkt parameters from ``params_path`` (see ``save``) when given, else ``language``'s."""
        if params_path:
            splitter = cls.load(params_path)
            splitter.min_words = min_words
            return splitter
        return cls(language=language, min_words=min_words)

    def fit(self, texts: Iterable[str]) -> "SentenceSplitter":
        """Learn abbreviations, collocations and sentence starters from a corpus (unsupervised)."""
        trainer = PunktTrainer()
        for text in texts:
            trainer.train(text, finalize=False)
        trainer.finalize_training()
        learned = trainer.get_params()
        learned.abbrev_types |= self.params.abbrev_types
        learned.collocations |= self.params.collocations
        learned.sent_starters |= self.params.sent_starters
        self.params = learned
        self._punkt = PunktSentenceTokenizer(self.params)
        return self

    def spans(self, text: str) -> List[Span]:
        """Character spans of the sentences of ``text``; [] when it has no non-space character."""
        spans: List[Span] = []
        for start, end in self._punkt.span_tokenize(text):
            spans.extend(_split_non_latin(text, start, end))
        spans = _cover_all_text(text, spans)
        if self.min_words:
            spans = _merge_short(text, spans, self.min_words)
        return spans

    def split(self, text: str) -> List[str]:
        return [text[start:end] for start, end in self.spans(text)]

    def save(self, path: Union[str, Path]) -> None:
        p = self.params
        state = {
            "language": self.language,
            "min_words": self.min_words,
            "abbrev_types": sorted(p.abbrev_types),
            "collocations": sorted(list(c) for c in p.collocations),
            "sent_starters": sorted(p.sent_starters),
            "ortho_context": dict(sorted(p.ortho_context.items())),
        }
        Path(path).write_text(json.dumps(state, indent=1))

    @classmethod
    def load(cls, path: Union[str, Path]) -> "SentenceSplitter":
        state = json.loads(Path(path).read_text())
        params = PunktParameters()
        params.abbrev_types = set(state["abbrev_types"])
        params.collocations = {tuple(c) for c in state["collocations"]}
        params.sent_starters = set(state["sent_starters"])
        for word, flags in state["ortho_context"].items():
            params.ortho_context[word] = flags
        return cls(language=state["language"], min_words=state["min_words"], params=params)


def _split_non_latin(text: str, start: int, end: int) -> List[Span]:
    spans, cursor = [], start
    for match in _NON_LATIN_ENDINGS.finditer(text, start, end):
        if match.start() > cursor:
            spans.append((cursor, match.start()))
        cursor = match.end()
    if cursor < end:
        spans.append((cursor, end))
    return spans


def _cover_all_text(text: str, spans: List[Span]) -> List[Span]:
    """Strip spans and give any non-space text between them to the sentence before it.

    Guarantees the invariant the rest of the package relies on: sentences plus whitespace gaps
    reproduce the text exactly, so nothing is lost when a passage is stored as sentences.
    """
    covered: List[Span] = []
    for start, end in spans:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start == end:
            continue
        previous_end = covered[-1][1] if covered else 0
        if text[previous_end:start].strip():
            if covered:
                covered[-1] = (covered[-1][0], start)
                covered[-1] = (covered[-1][0], _rstrip_end(text, covered[-1]))
            else:
                start = len(text) - len(text.lstrip())
        covered.append((start, end))
    tail_start = covered[-1][1] if covered else 0
    if text[tail_start:].strip():
        stripped_end = len(text.rstrip())
        if covered:
            covered[-1] = (covered[-1][0], stripped_end)
        else:
            covered.append((len(text) - len(text.lstrip()), stripped_end))
    return covered


def _rstrip_end(text: str, span: Span) -> int:
    start, end = span
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _merge_short(text: str, spans: List[Span], min_words: int) -> List[Span]:
    merged: List[Span] = []
    pending: Optional[int] = None
    for start, end in spans:
        begin = start if pending is None else pending
        if len(text[begin:end].split()) > min_words:
            merged.append((begin, end))
            pending = None
        else:
            pending = begin
    if pending is not None:
        if merged:
            merged[-1] = (merged[-1][0], spans[-1][1])
        else:
            merged.append((pending, spans[-1][1]))
    return merged
