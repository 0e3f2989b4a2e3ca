"""S3 helpers the benches share (not tests): uploading a sink's objects again as a baseline, and removing
the buckets a bench made."""

from __future__ import annotations

import concurrent.futures
import uuid

from tests.bench.bench_jdbc import timed_cpu


def upload_again(client, bucket: str, threads: int, prefix: str, made: list[str]) -> tuple[float, float]:
    """The objects of `bucket` uploaded again with plain boto3 `put_object` into a new bucket (its name is
    appended to `made`), `threads` at a time: (seconds, the machine's CPU seconds) of the upload alone."""
    keys = [o["Key"] for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
            for o in page.get("Contents", [])]
    bodies = {k: client.get_object(Bucket=bucket, Key=k)["Body"].read() for k in keys}
    target = f"{prefix}-{uuid.uuid4().hex[:10]}"
    client.create_bucket(Bucket=target)
    made.append(target)

    def upload() -> None:
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda k: client.put_object(Bucket=target, Key=k, Body=bodies[k]), keys))

    took, cpu, _ = timed_cpu(upload)
    return took, cpu


def remove_buckets(client, buckets: list[str]) -> None:
    """Empty and remove `buckets` (the S3 test server keeps objects in memory); best effort."""
    for bucket in buckets:
        try:
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
                keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
                if keys:
                    client.delete_objects(Bucket=bucket, Delete={"Objects": keys})
            client.delete_bucket(Bucket=bucket)
        except Exception as e:  # noqa: BLE001 -- the server may be gone
            print(f"could not remove bucket {bucket}: {e}")
