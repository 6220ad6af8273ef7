"""Where a DCSR query's time goes on a Milvus server: one top-3,000 search and one read of 100 sentences by id, at
``Strong`` and ``Bounded`` consistency, on a server with the tests' shortened loops or Milvus's defaults.

    .venv/bin/python benchmarks/scale.py milvus-latency --server-config test
    .venv/bin/python benchmarks/scale.py milvus-latency --server-config default

100,000 random 384-dimensional vectors in a FLAT collection (the shape of the 20k-passage benchmark); the median of
10 calls each, printed as lines (no result file: the figures are quoted in docs/benchmarks/engines.md).
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "support"))

import numpy as np  # noqa: E402

ROWS, DIM = 100_000, 384


def collection(client, name: str, level: str) -> None:
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("position", DataType.JSON)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    index = client.prepare_index_params()
    index.add_index(field_name="v", metric_type="IP", index_type="FLAT")
    client.create_collection(name, schema=schema, index_params=index, consistency_level=level)
    vectors = np.random.default_rng(0).standard_normal((ROWS, DIM)).astype(np.float32)
    for start in range(0, ROWS, 5000):
        rows = [
            {"id": str(i), "position": {"passage_id": f"p{i // 5}", "index": i % 5}, "v": vectors[i].tolist()}
            for i in range(start, start + 5000)
        ]
        client.insert(name, rows)
    client.flush(name)


def median_ms(call) -> float:
    times = []
    for _ in range(10):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return round(1000 * float(np.median(times)), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-config", choices=["test", "default"], default="default")
    args = parser.parse_args()
    import milvus_server
    from pymilvus import MilvusClient

    if args.server_config == "default":
        milvus_server.TEST_CONFIG = {}
    with tempfile.TemporaryDirectory() as data:
        server = milvus_server.MilvusServer(Path(data)).start()
        try:
            client = MilvusClient(uri=server.uri)
            query = np.random.default_rng(1).standard_normal((1, DIM)).astype(np.float32).tolist()
            ids = f"id in {json.dumps([str(i) for i in range(100)])}"
            for level in ("Strong", "Bounded"):
                name = f"latency_{level.lower()}"
                collection(client, name, level)
                search = median_ms(
                    lambda: client.search(name, data=query, limit=3000, output_fields=["position"])  # noqa: B023
                )
                read = median_ms(lambda: client.query(name, filter=ids, output_fields=["position"]))  # noqa: B023
                print(f"{args.server_config} server, {level}: search top 3,000 {search} ms, read 100 ids {read} ms")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
