"""Serve Haystack 2.x DCSR pipelines with Hayhooks, closed by default:

    python -m haystack_dcsr.haystack2.serve --pipelines-dir pipelines [--host 127.0.0.1] [--port 1416]

Hayhooks' own ``hayhooks run`` also serves routes that deploy pipelines from a request (``/deploy_files`` runs the
``pipeline_wrapper.py`` it is sent, ``/deploy-yaml``, ``/undeploy/...``), with no credentials, and answers CORS for
every origin, so that any web page the operator opens could reach them. This entry point serves the same
application without those routes, without CORS headers unless origins are named (``--cors-origin``), and with the
request body limit of the 1.x REST server (``core.storage.body_limit``: 413 past ``--max-body-bytes``).

Pipelines are deployed from ``--pipelines-dir`` when the server starts, one at a time: Hayhooks' default deploys them
from a thread pool, where each wrapper imports components and loads its models, and a pipeline whose deploy fails is
skipped with a warning while the server serves the rest. Here the server refuses to start instead, naming the
pipelines that did not deploy, so that a missing route is never found by a client's 404.
"""

import argparse
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Sequence

from haystack_dcsr.core.storage.body_limit import MAX_BODY_BYTES, BodyLimit

DEPLOY_ROUTES = ("/deploy_files", "/deploy-yaml", "/undeploy/{pipeline_name}")  # Hayhooks': run posted code


def create_app(pipelines_dir: str, cors_origins: Sequence[str] = (), max_body_bytes: int = MAX_BODY_BYTES):
    """Hayhooks' application for the pipelines in ``pipelines_dir``, less the routes that deploy posted pipelines,
    with CORS only for ``cors_origins`` and a body limit."""
    if not Path(pipelines_dir).is_dir():
        raise ValueError(f"--pipelines-dir {pipelines_dir!r} is not a folder")
    from hayhooks.settings import StartupDeployStrategy, settings

    settings.pipelines_dir = str(pipelines_dir)
    settings.cors_allow_origins = list(cors_origins)  # none: no page of another origin may call the server
    settings.startup_deploy_strategy = StartupDeployStrategy.SEQUENTIAL
    from hayhooks.server.app import create_app as hayhooks_app
    from hayhooks.server.routers import deploy_router, undeploy_router

    app = hayhooks_app()
    closed = [deploy_router, undeploy_router]  # included whole (FastAPI keeps the router) or route by route

    def kept(route) -> bool:
        router = getattr(route, "original_router", None)
        return not any(router is c for c in closed) and getattr(route, "path", None) not in DEPLOY_ROUTES

    app.router.routes = [route for route in app.router.routes if kept(route)]
    app.openapi_schema = None  # rebuilt without them
    app.router.lifespan_context = _every_pipeline_deployed(app.router.lifespan_context, Path(pipelines_dir))
    return BodyLimit(app, max_body_bytes)


def _every_pipeline_deployed(lifespan, pipelines_dir: Path):
    """Hayhooks' start-up (which deploys the pipelines), then a refusal to serve unless every pipeline folder of
    ``pipelines_dir`` was deployed."""

    @asynccontextmanager
    async def checked(app):
        async with lifespan(app) as state:
            wanted = {folder.name for folder in pipelines_dir.iterdir() if (folder / "pipeline_wrapper.py").is_file()}
            missing = sorted(wanted - set(app.state.pipeline_registry.get_names()))
            if missing:
                raise RuntimeError(
                    f"pipeline(s) {', '.join(missing)} of {pipelines_dir} did not deploy (their error is logged "
                    "above): not serving without them"
                )
            yield state

    return checked


def main(argv: Sequence[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipelines-dir", required=True, help="the folders of pipeline_wrapper.py + pipeline YAML")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=1416)
    parser.add_argument("--cors-origin", action="append", default=[], help="an origin allowed to call (repeatable)")
    parser.add_argument("--max-body-bytes", type=int, default=MAX_BODY_BYTES)
    args = parser.parse_args(argv)
    import uvicorn

    uvicorn.run(create_app(args.pipelines_dir, args.cors_origin, args.max_body_bytes), host=args.host, port=args.port)


if __name__ == "__main__":
    main()
