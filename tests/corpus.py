"""A small corpus with known answers, framework-free: both the Haystack 1.x and 2.x suites use it."""

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
