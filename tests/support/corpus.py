"""A small corpus with known answers, framework-free: both the Haystack 1.x and 2.x suites use it."""

import json

CORPUS = [
    (
        "Paris",
        "Paris is the capital of France. The Eiffel Tower was completed in 1889. "
        "The city hosts the Louvre, the most visited museum.",
    ),
    (
        "Berlin",
        "Berlin is the capital of Germany. The Berlin Wall divided the city from 1961 to 1989. "
        "The Brandenburg Gate is its most famous landmark.",
    ),
    (
        "Banana",
        "Bananas are elongated, edible fruit. They grow in tropical regions such as Ecuador. "
        "Monkeys and people both like eating them.",
    ),
    (
        "Jupiter",
        "Jupiter is the largest planet in the Solar System. It is a gas giant made mostly of hydrogen. "
        "Its Great Red Spot is a storm bigger than Earth.",
    ),
    (
        "Penicillin",
        "Penicillin was discovered by Alexander Fleming in 1928. It was the first widely used antibiotic. "
        "It kills bacteria by weakening their cell walls.",
    ),
]

QUESTIONS = [
    ("When was the Eiffel Tower completed?", "Paris"),
    ("Which wall divided Berlin?", "Berlin"),
    ("Where do bananas grow?", "Banana"),
    ("What is the largest planet in the solar system?", "Jupiter"),
    ("Who discovered penicillin?", "Penicillin"),
]

# the synthetic records and SQuAD files of the trainer tests: "what is the capital of <country>?" -> <city>
COUNTRIES = [
    "france",
    "spain",
    "italy",
    "chile",
    "peru",
    "kenya",
    "ghana",
    "nepal",
    "laos",
    "fiji",
    "oman",
    "cuba",
    "mali",
    "chad",
    "iran",
    "iraq",
    "togo",
    "benin",
    "niger",
    "egypt",
    "sudan",
    "yemen",
    "qatar",
    "malta",
]
CITIES = [
    "paris",
    "madrid",
    "rome",
    "lima",
    "nairobi",
    "accra",
    "hanoi",
    "tokyo",
    "delhi",
    "cairo",
    "doha",
    "oslo",
    "bern",
    "vienna",
    "prague",
    "warsaw",
    "dublin",
    "lisbon",
    "athens",
    "sofia",
    "riga",
    "kiev",
    "minsk",
    "baku",
]
FILLER = [
    "the weather there is often mild in spring.",
    "many tourists visit during the summer months.",
    "its markets sell fresh fruit every morning.",
    "the river floods every few years.",
    "an old railway crosses the northern hills.",
]


def tiny_squad(path, n=16):
    """A SQuAD v1.1 file of ``n`` one-question paragraphs (the input of ``dcsr-train build-model``)."""
    paragraphs = []
    for i in range(n):
        country, city = COUNTRIES[i], CITIES[i]
        context = f"{FILLER[i % 5].capitalize()} The capital of {country} is {city}. {FILLER[(i + 2) % 5].capitalize()}"
        start = context.index(city)
        qas = [
            {
                "id": f"q{i}",
                "question": f"what is the capital of {country}?",
                "answers": [{"text": city, "answer_start": start}],
            }
        ]
        paragraphs.append({"context": context, "qas": qas})
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "capitals", "paragraphs": paragraphs}]}))
    return path


def core_ranking(model, question, drop=None, top_k=5):
    """The ranking every adapter and engine must serve for ``question`` over ``CORPUS`` when passage ``drop``
    (a title) can no longer be served: the core alone (the exact sentence index under the ranking driver, that
    passage removed), as [(title, HasAns)]."""
    from haystack_dcsr.core.indexes.exact_index import ExactSentenceIndex
    from haystack_dcsr.core.ranking.passage_ranking import rank_passages

    units = model.passage_units([text for _, text in CORPUS])
    index = ExactSentenceIndex(model.encode_passages(units), [len(u) for u in units])
    index.remove(i for i, (title, _) in enumerate(CORPUS) if title == drop)
    ranked = rank_passages(index, model.encode_queries([question]), model.temperature, len(index), top_k)[0]
    return [(CORPUS[p.ref][0], p.hasans) for p in ranked]
