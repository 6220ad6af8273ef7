"""The package's REST server (``python -m haystack_dcsr.serve``) as a child process, and the saved folder it serves:
shared by the REST tests, the wheel test and the Milvus fault tests."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from corpus import CORPUS, QUESTIONS
from milvus_server import free_port

ROOT = Path(__file__).resolve().parents[2]


def search_yaml(store_type: str, store_params: str, model: str) -> str:
    """A pipeline ``search``: a DCSRRetriever (``model``, top 3) over the store ``Store`` of ``store_type``, whose
    params are the YAML flow mapping ``store_params``."""
    return f"""version: ignore
components:
  - name: Store
    type: {store_type}
    params: {store_params}
  - name: Retriever
    type: DCSRRetriever
    params: {{document_store: Store, query_model: {model}, top_k: 3, progress_bar: false}}
pipelines:
  - name: search
    nodes:
      - {{name: Retriever, inputs: [Query]}}
"""


def saved_folder(folder: Path, model: str) -> Path:
    """A FAISS pipeline over the test corpus (each passage with a numeric ``year``), saved with save_pipeline."""
    from haystack.schema import Document

    from haystack_dcsr import SentencePreprocessor, load_pipeline, save_pipeline

    folder.mkdir(parents=True)
    faiss = f'{{sql_url: "sqlite:///{folder / "build.db"}", embedding_dim: 32, faiss_index_factory_str: Flat}}'
    (folder / "build.yml").write_text(search_yaml("FAISSDocumentStore", faiss, model))
    pipeline = load_pipeline(folder / "build.yml", pipeline_name="search")
    passages = [
        Document(content=text, meta={"title": title, "year": 1900 + i}) for i, (title, text) in enumerate(CORPUS)
    ]
    retriever = pipeline.get_node("Retriever")
    retriever.document_store.write_documents(SentencePreprocessor(progress_bar=False).process(passages)["documents"])
    retriever.document_store.update_embeddings(retriever)
    return save_pipeline(pipeline, folder / "served" / "search.yml")


def answers_in_process(path: Path):
    from haystack_dcsr import load_pipeline

    pipeline = load_pipeline(path, pipeline_name="search")
    return {q: ranked(d.to_dict() for d in pipeline.run(query=q)["documents"]) for q, _ in QUESTIONS}


def ranked(documents):
    return [(d["meta"]["title"], round(d["score"], 4)) for d in documents]


class Server:
    """``python -m haystack_dcsr.serve`` as a child process on a free loopback port. ``hook``: Python run in the
    child before the server (a fault test's probe: it may patch a function to leave a progress marker and wait
    there to be killed), with ``env`` added to the child's environment."""

    def __init__(self, path: Path, *flags: str, python: str = sys.executable, cwd: Path = ROOT):
        self.path, self.flags, self.process, self.python, self.cwd = path, flags, None, python, cwd

    def start(self, timeout: float = 120, hook: str = "", env: dict = {}) -> "Server":
        self.port = free_port()
        serve = ["-m", "haystack_dcsr.serve"]
        if hook:
            serve = ["-c", f"{hook}\nimport runpy\nrunpy.run_module('haystack_dcsr.serve', run_name='__main__')"]
        command = [self.python, *serve, "--pipeline", str(self.path)]
        command += ["--query-pipeline", "search", "--port", str(self.port), *self.flags]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HAYSTACK_TELEMETRY_ENABLED": "False", **env}
        self.process = subprocess.Popen(
            command, cwd=self.cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited: {self.process.stdout.read().decode()[-3000:]}")
            try:
                if self.get("/initialized") == (200, True):
                    return self
            except OSError:
                time.sleep(0.3)
        raise AssertionError("the server did not answer /initialized in time")

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()

    def get(self, route: str):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{route}", timeout=30) as response:
            return response.status, json.loads(response.read())

    def post(self, route: str, body, raw: bytes = None):
        data = raw if raw is not None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{route}", data=data, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            text = error.read().decode()
            return error.code, json.loads(text) if text.startswith(("{", "[")) else text
