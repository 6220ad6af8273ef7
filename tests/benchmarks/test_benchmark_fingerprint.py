"""The SQuAD-open report keeps systems measured in earlier sessions only while its fingerprint holds:
it must change with what is evaluated and nothing else."""

from benchmark_scripts import load_benchmark


def test_the_fingerprint_ignores_pair_cosines_but_not_what_is_evaluated():
    fingerprint = load_benchmark("squad_open").benchmark_fingerprint
    questions = [["Who won Super Bowl 50?", ["Denver Broncos"], "dev-0-0"]]
    texts = {"dev-0-0": "Denver won.", "dev-0-16": "New England won."}
    pair = {
        "question": "Who won Super Bowl 50?",
        "meq": "Who won Super Bowl XLIX?",
        "gold": "dev-0-0",
        "meq_gold": "dev-0-16",
        "cosine": 0.8627776503562927,
    }
    base = fingerprint(questions, texts, [pair])
    # a fresh machine's rebuild of the same contrast set: the cosine's last digits differ
    assert fingerprint(questions, texts, [{**pair, "cosine": 0.8627774715423584}]) == base
    assert fingerprint(questions, texts, [{**pair, "meq_gold": "dev-0-0"}]) != base
    assert fingerprint(questions, {"dev-0-0": "Denver won."}, [pair]) != base
    assert fingerprint(questions + [["When?", ["1990"], "dev-0-16"]], texts, [pair]) != base


def test_a_model_retrained_into_the_same_directory_is_not_read_from_the_old_cache(tmp_path):
    squad_open = load_benchmark("squad_open")
    bench = squad_open.Benchmark([], [], {}, [], [], "f" * 12)
    model = tmp_path / "run" / "last"
    (model / "query_encoder").mkdir(parents=True)
    (model / "query_encoder" / "model.safetensors").write_bytes(b"first run")
    spec = f"DCSR-ft=dcsr:{model}"
    first = bench.cache_file(tmp_path, spec)
    assert bench.cache_file(tmp_path, spec) == first  # same files, same cache
    (model / "query_encoder" / "model.safetensors").write_bytes(b"the retrain")
    assert bench.cache_file(tmp_path, spec) != first
    # model-free kinds are keyed by their spec alone, as before
    assert bench.cache_file(tmp_path, "BM25=bm25").name == f"{'f' * 12}-0aca2e783d.json"
