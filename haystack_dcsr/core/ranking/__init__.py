"""Ranking: HasAns, the one ranking driver, fusion, metrics and the parameters every retriever checks."""
