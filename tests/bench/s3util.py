"""S3 helpers the benches share (not tests): removing the buckets a bench made."""

from __future__ import annotations


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
