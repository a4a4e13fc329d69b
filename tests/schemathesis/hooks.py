"""Schemathesis hooks for the aw-server API run (loaded by run.sh via SCHEMATHESIS_HOOKS).

1. Safety net for the test-bucket restriction. The OpenAPI document gives `bucket_id` and the
   `id` of imported buckets the pattern `^schemathesis-[a-z0-9-]{1,20}$`, but negative test
   cases deliberately violate schemas. Right before each request, any bucket id that would
   leave the pattern (path parameter, or an imported bucket's `id`, missing ids included) is
   replaced by a deterministic `schemathesis-x<hash>` name, so no request can write to a
   bucket outside the test names. run.sh checks afterwards that none was written. The
   `hostname` of a range deletion over a host's buckets (`DELETE /api/0/events`) is kept to
   the same names, so no generated request deletes from a bucket outside the tests either.

2. The export routes send no Content-Type header, deliberately (the reference does the same;
   documented in openapi.json). For those two operations only, a missing
   Content-Type is read as `application/json` so their body is still validated against the
   ExportDocument schema instead of failing on the missing header.
"""

import hashlib
import json
import re

import schemathesis

BUCKET_ID = re.compile(r"^schemathesis-[a-z0-9-]{1,20}$")
IMPORT_FIELDS = ("buckets.json", "buckets")
EXPORT_OPERATIONS = {"exportBucket", "exportAll"}


def safe_bucket_id(value):
    if isinstance(value, str) and BUCKET_ID.match(value):
        return value
    digest = hashlib.sha1(repr(value).encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"schemathesis-x{digest}"


def sanitize_document(document):
    """An import document with every bucket id inside the test pattern (other shapes as they are)."""
    if not isinstance(document, dict):
        return document
    buckets = document.get("buckets")
    if isinstance(buckets, dict):
        for bucket in buckets.values():
            if isinstance(bucket, dict):
                bucket["id"] = safe_bucket_id(bucket.get("id"))
    return document


def sanitize_text(value):
    """The same for a document still in text (or bytes) form, e.g. a multipart file part."""
    try:
        text = value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else value
        document = json.loads(text)
    except (ValueError, UnicodeDecodeError, TypeError):
        return value
    if not isinstance(document, dict):
        return value
    fixed = json.dumps(sanitize_document(document))
    return fixed.encode() if isinstance(value, (bytes, bytearray)) else fixed


@schemathesis.hook
def before_call(context, case, kwargs):
    params = case.path_parameters
    if params and "bucket_id" in params:
        params["bucket_id"] = safe_bucket_id(params["bucket_id"])
    if case.operation.path == "/api/0/events" and isinstance(case.query, dict):
        case.query["hostname"] = safe_bucket_id(case.query.get("hostname"))
    # A rename's new id and a merge's `from` name buckets too.
    operation = case.operation.definition.raw.get("operationId")
    if operation in ("renameBucket", "mergeBucket") and isinstance(case.body, dict):
        key = "id" if operation == "renameBucket" else "from"
        if key in case.body or operation == "mergeBucket":
            case.body[key] = safe_bucket_id(case.body.get(key))
    if case.operation.path == "/api/0/import":
        body = case.body
        media = (case.media_type or "").lower()
        if media.startswith("multipart/") and isinstance(body, dict):
            for field in IMPORT_FIELDS:
                if field in body:
                    part = body[field]
                    body[field] = sanitize_document(part) if isinstance(part, dict) else sanitize_text(part)
        elif isinstance(body, dict):
            sanitize_document(body)
        elif isinstance(body, (str, bytes, bytearray)):
            case.body = sanitize_text(body)


@schemathesis.hook
def after_call(context, case, response):
    if case.operation.definition.raw.get("operationId") in EXPORT_OPERATIONS:
        if response.status_code == 200 and not response.headers.get("content-type"):
            response.headers["content-type"] = ["application/json"]
