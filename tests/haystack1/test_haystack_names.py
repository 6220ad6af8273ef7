"""Haystack's own parameter names work on the DCSR nodes, and both Haystacks share the rankers' defaults."""

import inspect

import pytest

from haystack_dcsr import CrossEncoderRanker, DCSRRetriever, QueryEncoder
from haystack_dcsr.core.model.cross_encoder import DEFAULT_FIRST_STAGE_WEIGHT, DEFAULT_TOP_K


def test_devices_is_accepted_where_haystack_takes_it(tiny_bert):
    retriever = DCSRRetriever(query_model=tiny_bert, devices=["cpu"], progress_bar=False)
    assert str(retriever.query_encoder.tower.device) == "cpu"
    encoder = QueryEncoder(tiny_bert, devices=["cpu"])
    assert str(encoder.tower.device) == "cpu"
    with pytest.raises(ValueError, match="DCSRRetriever: give device or devices, not both"):
        DCSRRetriever(query_model=tiny_bert, device="cpu", devices=["cpu"])


def test_one_name_for_the_model_across_nodes(tiny_bert):
    by_model = QueryEncoder(model=tiny_bert, progress_bar=False)
    by_old_name = QueryEncoder(model_name_or_path=tiny_bert, progress_bar=False)
    question = ["who discovered penicillin?"]
    assert (by_model.encode(question) == by_old_name.encode(question)).all()
    with pytest.raises(ValueError, match="give model or model_name_or_path"):
        QueryEncoder(model=tiny_bert, model_name_or_path=tiny_bert)
    assert "model" in inspect.signature(DCSRRetriever).parameters


def test_the_1x_ranker_defaults_are_the_shared_ones():
    params = inspect.signature(CrossEncoderRanker).parameters
    assert params["first_stage_weight"].default == DEFAULT_FIRST_STAGE_WEIGHT == 0.0
    assert params["top_k"].default == DEFAULT_TOP_K == 10
    assert params["scale_score"].default is True and "progress_bar" in params and "devices" in params


def test_use_auth_token_reaches_the_hub_for_every_model_a_node_loads(tiny_bert, monkeypatch, tmp_path):
    from tiny_models import make_tiny_cross_encoder

    import haystack_dcsr.core.model.hub as hub

    cross_encoder = make_tiny_cross_encoder(tmp_path / "ce")
    asked = []

    def snapshot(repo_id, revision=None, token=None):
        asked.append((repo_id, token))
        return cross_encoder if repo_id == "me/ce" else tiny_bert

    monkeypatch.setattr(hub, "snapshot", snapshot)
    DCSRRetriever(query_model="me/private-dcsr", use_auth_token="hf_secret", progress_bar=False)
    QueryEncoder("me/private-query", use_auth_token=True)
    CrossEncoderRanker(model="me/ce", use_auth_token="hf_other", use_gpu=False)
    assert ("me/private-dcsr", "hf_secret") in asked and ("me/private-query", True) in asked
    assert ("me/ce", "hf_other") in asked and all(token is not None for _, token in asked)
