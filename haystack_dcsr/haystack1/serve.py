"""``python -m haystack_dcsr.serve``: serve a saved Haystack 1.x pipeline over HTTP.

By default it runs this package's REST API (``haystack_dcsr.haystack1.rest_api``; ``pip install
'haystack-dcsr[haystack1,serve]'``), which answers Haystack's ``/query`` request and response shapes:

    python -m haystack_dcsr.serve --pipeline served/query.yml --query-pipeline search --port 8000
    curl -X POST localhost:8000/query -H 'Content-Type: application/json' \
        -d '{"query": "Who decoded the waggle dance?", "params": {"Retriever": {"top_k": 3}}}'

``--haystack-rest-api`` runs Haystack 1.x's own ``rest_api`` instead, where a user installed it from Haystack's
repository (it is not on PyPI): Haystack 1.x finds a custom node type in YAML only if its module was imported in
the process that reads the YAML, so this launcher imports ``haystack_dcsr`` and hands that API a resolved copy
of the YAML.

One worker: a FAISS store lives in the process that loaded it (Haystack says the same).
"""

import argparse
import importlib.util
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

INSTALL = "pip install 'git+https://github.com/deepset-ai/haystack.git@v1.26.4#subdirectory=rest_api' uvicorn"
INSTALL_SERVE = "pip install 'haystack-dcsr[haystack1,serve]'"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m haystack_dcsr.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--pipeline", required=True, help="the YAML file (e.g. one written by save_pipeline)")
    parser.add_argument("--query-pipeline", default="query", help="its query pipeline's name (default: query)")
    parser.add_argument("--indexing-pipeline", default="indexing", help="with --haystack-rest-api: its indexing one")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1: this machine only; 0.0.0.0: every interface)",
    )
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    parser.add_argument(
        "--allow-writes",
        action="store_true",
        help="add POST /documents/delete_by_filters; each deletion is saved to the pipeline's folder (off by default)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=None,
        help="refuse larger request bodies with 413 (default 1 MiB)",
    )
    parser.add_argument(
        "--haystack-rest-api", action="store_true", help=f"run Haystack 1.x's own rest_api instead ({INSTALL})"
    )
    return parser


def main(argv: Optional[List[str]] = None) -> None:
    args = build_parser().parse_args(argv)
    if not args.haystack_rest_api:
        missing = [name for name in ("fastapi", "uvicorn") if importlib.util.find_spec(name) is None]
        if missing:
            sys.exit(f"error: {', '.join(missing)} not installed: {INSTALL_SERVE}")
        import uvicorn
        from haystack.errors import PipelineConfigError

        from haystack_dcsr.haystack1.rest_api import create_app

        try:
            limit = {} if args.max_body_bytes is None else {"max_body_bytes": args.max_body_bytes}
            app = create_app(args.pipeline, args.query_pipeline, allow_writes=args.allow_writes, **limit)
        except (PipelineConfigError, ValueError, OSError) as error:  # a folder or a setting at fault: said in a line
            sys.exit(f"error: {error}")
        uvicorn.run(app, host=args.host, port=args.port, workers=1, log_level="warning")
        return
    missing = [name for name in ("rest_api", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        sys.exit(f"error: {', '.join(missing)} not installed. Haystack 1.x's REST API is not on PyPI: {INSTALL}")
    import haystack_dcsr  # noqa: F401  (registers DCSRRetriever, SentencePreprocessor, ... before the YAML is read)

    yaml_path, resolved = resolved_yaml(args.pipeline)
    os.environ["PIPELINE_YAML_PATH"] = yaml_path
    os.environ["QUERY_PIPELINE_NAME"] = args.query_pipeline
    os.environ["INDEXING_PIPELINE_NAME"] = args.indexing_pipeline
    try:
        import uvicorn
        from rest_api.application import app  # builds the pipelines from PIPELINE_YAML_PATH, once, at import
    finally:  # the API has read the resolved copies: nothing is left in the temporary folder
        if resolved is not None:
            from haystack_dcsr.haystack1.engine.saved_store import discard_temporary_config

            os.unlink(yaml_path)
            for component in resolved.get("components", []):
                discard_temporary_config(component.get("params") or {})

    uvicorn.run(app, host=args.host, port=args.port, workers=1)


def resolved_yaml(path: str) -> Tuple[str, Optional[Dict[str, Any]]]:
    """The pipeline file as the REST API must read it: checked with ``load_pipeline``'s limits, and
    with saved stores' files named by absolute paths (saved YAML names them relative to itself,
    which Haystack's plain loader would read against the working directory). Returns the file to
    read and, when that is a temporary resolved copy, its config (whose temporary files go once read)."""
    import tempfile
    from pathlib import Path

    import yaml

    from haystack_dcsr.haystack1.pipelines import read_pipeline_yaml, resolve_saved_stores
    from haystack_dcsr.haystack1.preprocessor import stub_haystack_punkt

    stub_haystack_punkt()  # the REST API builds Haystack's PreProcessor, which would try to download nltk data
    config = read_pipeline_yaml(path)
    resolved = resolve_saved_stores(config, Path(path).resolve().parent)
    if resolved == config:
        return os.path.abspath(path), None
    handle, name = tempfile.mkstemp(prefix="dcsr-serve-", suffix=".yml")
    with os.fdopen(handle, "w") as out:
        yaml.safe_dump(resolved, out, sort_keys=False)
    return name, resolved


if __name__ == "__main__":
    main()
