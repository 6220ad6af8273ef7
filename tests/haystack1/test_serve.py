"""Serving YAML pipelines through Haystack 1.x's own REST API (``--haystack-rest-api``; the package's own is
tested for real in test_rest_api.py): the launcher registers the DCSR nodes in
the process that reads the YAML. ``rest_api`` and ``uvicorn`` are stood in for by two small modules
doing what they do (the API loads PIPELINE_YAML_PATH with a plain Pipeline.load_from_yaml at import)."""

import subprocess
import sys
import textwrap
from pathlib import Path

from test_errors import YAML  # an InMemory store + DCSRRetriever, pipeline "query"

ROOT = Path(__file__).resolve().parents[2]


def stand_ins(directory: Path) -> Path:
    (directory / "rest_api").mkdir(parents=True)
    (directory / "rest_api" / "__init__.py").write_text("")
    (directory / "rest_api" / "application.py").write_text(
        textwrap.dedent("""
        import os
        from pathlib import Path
        from haystack import Pipeline
        pipeline = Pipeline.load_from_yaml(Path(os.environ["PIPELINE_YAML_PATH"]),
                                           pipeline_name=os.environ["QUERY_PIPELINE_NAME"])
        app = {"pipeline": pipeline}
    """)
    )
    (directory / "uvicorn.py").write_text(
        textwrap.dedent("""
        def run(app, host, port, workers):
            kinds = {type(node).__name__ for node in app["pipeline"].components.values()}
            print("SERVING", "DCSRRetriever" if "DCSRRetriever" in kinds else sorted(kinds), host, port, workers)
    """)
    )
    return directory


def run(code: str, env_dir: Path, tiny_bert: str, tmp_path: Path):
    (tmp_path / "p.yml").write_text(YAML.format(model=tiny_bert, params="top_k: 5"))
    env = {
        "PYTHONPATH": f"{env_dir}:{ROOT}",
        "HAYSTACK_TELEMETRY_ENABLED": "False",
        "HF_HUB_OFFLINE": "1",
        "PATH": "/usr/bin:/bin",
        "PIPELINE_YAML_PATH": str(tmp_path / "p.yml"),
        "QUERY_PIPELINE_NAME": "query",
    }
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


def test_the_launcher_serves_yaml_that_names_dcsr_nodes(tmp_path, tiny_bert):
    env_dir = stand_ins(tmp_path / "site")
    plain = run("import rest_api.application", env_dir, tiny_bert, tmp_path)  # what the REST API does alone
    assert plain.returncode != 0 and "DCSRRetriever" in plain.stderr
    served = run(
        f"from haystack_dcsr.serve import main; main(['--pipeline', '{tmp_path / 'p.yml'}', "
        "'--query-pipeline', 'query', '--port', '8123', '--haystack-rest-api'])",
        env_dir,
        tiny_bert,
        tmp_path,
    )
    assert served.returncode == 0, served.stderr[-2000:]
    assert "SERVING DCSRRetriever 127.0.0.1 8123 1" in served.stdout  # loopback unless --host says otherwise


def test_the_launcher_says_how_to_install_the_rest_api(tmp_path, tiny_bert):
    (tmp_path / "empty").mkdir()
    result = run(
        "from haystack_dcsr.serve import main; main(['--pipeline', 'x.yml', '--haystack-rest-api'])",
        tmp_path / "empty",
        tiny_bert,
        tmp_path,
    )
    assert result.returncode != 0 and "Haystack 1.x's REST API is not on PyPI" in result.stderr


def test_a_saved_pipeline_is_served_from_its_folder_and_leaves_no_temporary_file(tmp_path, tiny_bert, corpus):
    """Saved YAML names its stores' files relative to itself; the launcher hands the REST API a resolved
    copy and removes it once the API has read it."""
    from test_saved_pipelines import shipped

    from haystack_dcsr import SentencePreprocessor, load_pipeline, save_pipeline

    pipeline = load_pipeline(shipped("hybrid", tiny_bert, tmp_path), pipeline_name="search")
    pipeline.get_node("BM25").document_store.write_documents(corpus)
    sentences = pipeline.get_node("DCSR").document_store
    sentences.write_documents(SentencePreprocessor(progress_bar=False).process(corpus)["documents"])
    sentences.update_embeddings(pipeline.get_node("DCSR"))
    saved = save_pipeline(pipeline, tmp_path / "served" / "hybrid.yml")
    env_dir = stand_ins(tmp_path / "site")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    code = (
        f"import tempfile; tempfile.tempdir = {str(temporary)!r}\n"
        f"from haystack_dcsr.serve import main; main(['--pipeline', {str(saved)!r}, '--query-pipeline', 'search', "
        "'--haystack-rest-api'])"
    )
    served = run(code, env_dir, tiny_bert, tmp_path)
    assert served.returncode == 0, served.stderr[-2000:]
    assert "SERVING DCSRRetriever 127.0.0.1 8000 1" in served.stdout
    left = [p.name for p in temporary.iterdir() if p.name.startswith(("dcsr-serve-", "dcsr-store-"))]
    assert left == []  # (haystack-dcsr-nltk, the empty punkt stand-in, is one fixed folder, reused)
