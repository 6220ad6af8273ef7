"""The framework-free core: the model directory (``DCSRModel``), the towers, the sentence splitter, HasAns, fusion,
metrics, int8 and the MEQ tools. Nothing here imports Haystack; both adapters and the trainer build on it."""
