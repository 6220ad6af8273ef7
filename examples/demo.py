"""Index the shipped demo corpus with the YAML indexing pipeline, then ask it questions.

Runs offline on the embedded defaults (FAISS + SQLite, all-MiniLM-L6-v2 zero-shot):

    make demo            # or: python examples/demo.py [--workdir DIR]
"""
import argparse
import os
import tempfile
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack import Pipeline  # noqa: E402

import haystack_dcsr  # noqa: E402,F401  (registers DCSR nodes for YAML)

HERE = Path(__file__).parent
QUESTIONS = [
    "Who decoded the waggle dance of honey bees?",
    "When was the Fresnel lens invented?",
    "Which eruption stopped flights across Europe?",
    "Who was the first world chess champion?",
    "Which country produces the most coffee?",
    "What is the primary mirror of the James Webb telescope made of?",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", help="where to put the SQLite file and FAISS index (default: a temp dir)")
    args = parser.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="dcsr-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ["DOCUMENTSTORE_PARAMS_SQL_URL"] = f"sqlite:///{workdir / 'store.db'}"

    indexing = Pipeline.load_from_yaml(HERE / "pipelines" / "indexing.haystack-pipeline.yml", pipeline_name="indexing")
    files = sorted((HERE / "data" / "demo").glob("*.txt"))
    indexing.run(file_paths=files, meta=[{"name": f.stem} for f in files])
    store = indexing.get_document_store()
    store.save(workdir / "dcsr.faiss")
    print(f"Indexed {len(files)} files as {store.get_document_count()} sentences in {workdir}\n")

    del os.environ["DOCUMENTSTORE_PARAMS_SQL_URL"]
    os.environ["DOCUMENTSTORE_PARAMS_FAISS_INDEX_PATH"] = str(workdir / "dcsr.faiss")
    search = Pipeline.load_from_yaml(HERE / "pipelines" / "query.haystack-pipeline.yml", pipeline_name="search")
    for question in QUESTIONS:
        passages = search.run(query=question, params={"Retriever": {"top_k": 2}})["documents"]
        print(f"Q: {question}")
        for rank, passage in enumerate(passages, 1):
            best = passage.meta["dcsr_sentences"][0]
            print(f"  {rank}. HasAns={passage.score:.3f}  [{passage.meta['name']}] {best['text']}")
        print()


if __name__ == "__main__":
    main()
