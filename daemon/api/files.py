"""`/v1/files`: JSONL uploads for OpenAI-dialect batches and the result files.

Uploads stream to disk chunk by chunk (never held in memory) under a temporary name,
renamed into place once complete, with a hard size cap: past it the client gets 413
at once and the partial file is deleted. An upload that sends nothing for
UPLOAD_IDLE_S is refused (408), so no live upload leaves its partial file untouched
for long (what a start may sweep: `domain/leftovers.py`). A workspace has at most
`server.max_concurrent_uploads` uploads in progress. A file past its `expires_at`
(OpenAI's `expires_after`) is gone: 404, and not listed; a timer deletes it.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, TypeVar, Union
from urllib.parse import quote

from aiohttp import BodyPartReader, hdrs, web
from aiohttp.http_exceptions import BadHttpMessage
from msgspec import Meta

from daemon.api import idempotency, paging, respond
from daemon.api.context import SERVICES, Services
from daemon.api.middleware import WORKSPACE
from daemon.dialects.base import IDEMPOTENCY_KEY
from daemon.dialects.openai.render import file_object
from daemon.dialects.openai.shapes import (
    BatchRequestRecord,
    FileDeleted,
    FileList,
    FileObject,
    FileUpload,
    OutputLine,
)
from daemon.domain import ids
from daemon.domain.errors import (
    InvalidRequest,
    RequestTimeout,
    TooLarge,
    TooMany,
    no_batch_access,
    not_found,
)
from daemon.domain.files import BATCH, BATCH_OUTPUT, FileRecord, lifetime_from_form
from daemon.domain.leftovers import UPLOAD_IDLE_S
from daemon.domain.routes import Media, Operation, Param, Route
from daemon.store.files import PartialFile
from daemon.store.interface import WorkspaceRecord

CHUNK = 256 * 1024
FIELD_BYTES = 4096  # the most a form field other than the file may hold
MB = 1024 * 1024
UPLOADS = web.AppKey("uploads_in_progress", Counter)
LIFETIME = "expires_after"  # sent as the fields expires_after[anchor], expires_after[seconds]
T = TypeVar("T")

if TYPE_CHECKING:
    from hashlib import _Hash as Hash


def _context(request: web.Request) -> tuple[Services, WorkspaceRecord]:
    workspace: WorkspaceRecord = request[WORKSPACE]
    if not workspace.batch_access:  # files are part of the Batch API: all of it is 404
        raise no_batch_access()
    return request.app[SERVICES], workspace


async def upload(request: web.Request) -> web.Response:
    services, workspace = _context(request)
    key = idempotency.key_of(request)
    in_progress = request.app[UPLOADS]
    if in_progress[workspace.id] >= services.config.server.max_concurrent_uploads:
        raise TooMany("Too many concurrent uploads for this workspace; retry shortly.",
                      code="too_many_uploads", retry_after_s=1)
    in_progress[workspace.id] += 1
    digest = hashlib.sha256()
    try:
        record = await _receive(request, services, workspace, digest)
    finally:
        in_progress[workspace.id] -= 1
    added = False

    async def create() -> web.Response:
        nonlocal added
        await asyncio.to_thread(services.repo.add_file, record)
        added = True
        return respond.json(file_object(record))

    try:
        return await idempotency.once(request, services, workspace, key=key,
                                      body_sha256=digest.hexdigest(), create=create)
    finally:
        if not added:  # no record (failed, or a retry answered from its key): nobody's bytes
            services.files.remove(record.path)


async def _receive(request: web.Request, services: Services, workspace: WorkspaceRecord,
                   digest: Hash) -> FileRecord:
    """Stream the upload to a partial file; commit it only once the whole body checks out
    (leaving the `with` block any other way discards it). `digest` takes each part's name
    and content, the body an `Idempotency-Key` is compared by: not the raw bytes, whose
    multipart boundary a client draws anew for every request."""
    if not request.content_type.startswith("multipart/"):
        raise InvalidRequest("Upload a file as multipart/form-data with 'file' and 'purpose'.",
                             param="file")
    try:
        reader = await request.multipart()
    except ValueError as exc:  # e.g. no boundary: nothing can be read
        raise InvalidRequest(f"The multipart body is malformed: {exc}.", param="file") from exc
    purpose, stored, lifetime = None, None, {}
    with services.files.open_partial(ids.file_id()) as out:
        try:
            while (part := await _idle(reader.next())) is not None:
                if not isinstance(part, BodyPartReader):
                    continue
                if part.name == "purpose":
                    purpose = (await _field(part, digest)).strip()
                elif (key := _lifetime_key(part.name)) is not None:
                    lifetime[key] = await _field(part, digest)
                elif part.name == "file" and stored is None:
                    _mark(digest, "file", part.filename or "")
                    stored = (_clean_name(part.filename), await _stream(
                        part, out, services.config.server.max_upload_mb, digest))
        except InvalidRequest:
            raise
        except (ValueError, BadHttpMessage) as exc:  # a body cut short, malformed part headers
            raise InvalidRequest(f"The multipart body is malformed: {exc}.",
                                 param="file") from exc
        record = _checked(out, purpose, stored, workspace, now=services.clock(),
                          lifetime=lifetime_from_form(lifetime, param=LIFETIME))
        await asyncio.to_thread(out.commit)
    return record


def _lifetime_key(name: str | None) -> str | None:
    """`anchor` for the field `expires_after[anchor]`, and so on; None for other fields."""
    prefix = LIFETIME + "["
    if name and name.startswith(prefix) and name.endswith("]"):
        return name[len(prefix):-1]
    return None


def _checked(out: PartialFile, purpose: str | None, stored: tuple[str, int] | None,
             workspace: WorkspaceRecord, *, now: float, lifetime: int | None) -> FileRecord:
    if stored is None:
        raise InvalidRequest("The multipart body has no 'file' part.", param="file")
    if purpose != BATCH:
        raise InvalidRequest(f"'purpose' must be 'batch'; got {purpose!r}.", param="purpose")
    filename, size = stored
    if size == 0:
        raise InvalidRequest("The uploaded file is empty.", param="file", code="empty_file")
    return FileRecord(id=out.path.name, workspace_id=workspace.id, filename=filename,
                      purpose=purpose, bytes=size, created_at=now, path=str(out.path),
                      expires_at=now + lifetime if lifetime is not None else None)


def _clean_name(filename: str | None) -> str:
    """A display name without control characters, quotes or path parts."""
    name = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(c for c in name if c.isprintable() and c not in '"')
    return name[:255] or "upload.jsonl"


def _mark(digest: Hash, name: str, extra: str = "") -> None:
    """A part's start in `digest`, so parts hash apart from their neighbours."""
    digest.update(f"\0{len(name)}:{name}{len(extra)}:{extra}\0".encode())


async def _stream(part: BodyPartReader, out: PartialFile, limit_mb: int, digest: Hash) -> int:
    """Copy one part to `out`; 413 (and no file) the moment it passes the cap."""
    limit, size = limit_mb * MB, 0
    while chunk := await _idle(part.read_chunk(CHUNK)):
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"The upload exceeds the {limit_mb} MB limit.", param="file",
                           code="file_too_large")
        out.append(chunk)  # 256 KB into the page cache: not worth a thread hop
        digest.update(chunk)
    return size


async def _field(part: BodyPartReader, digest: Hash) -> str:
    """A small form field's text, read at most `FIELD_BYTES` at a time and never
    decompressed: its size is what is read (a compressed field could inflate to any
    size, and no client needs to compress a word)."""
    name = part.name or "field"
    if part.headers.get(hdrs.CONTENT_ENCODING, "identity").lower() != "identity":
        raise InvalidRequest(f"The form field '{name}' must not be compressed.", param=name)
    data = bytearray()
    while chunk := await _idle(part.read_chunk(FIELD_BYTES)):
        data += chunk
        if len(data) > FIELD_BYTES:
            raise InvalidRequest(f"The form field '{name}' is longer than {FIELD_BYTES} "
                                 "bytes.", param=name)
    _mark(digest, name)
    digest.update(data)
    try:
        return data.decode(part.get_charset(default="utf-8"))
    except (LookupError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"The form field '{name}' is not text: {exc}.",
                             param=name) from exc


async def _idle(step: Awaitable[T]) -> T:
    """One read of the upload body, refused (408) if the client sends nothing for
    UPLOAD_IDLE_S: a partial file is never left untouched for long by a live upload."""
    try:
        async with asyncio.timeout(UPLOAD_IDLE_S):
            return await step
    except TimeoutError as exc:
        raise RequestTimeout(f"The upload sent nothing for {UPLOAD_IDLE_S:g} s.",
                             param="file", code="upload_timeout") from exc


async def _load(request: web.Request) -> FileRecord:
    """The file the path names; 404 if there is none, or it has expired (the timer that
    deletes expired files may not have run yet)."""
    services, workspace = _context(request)
    file_id = request.match_info["file_id"]
    record = await asyncio.to_thread(services.repo.file, file_id, workspace_id=workspace.id)
    if record is None or record.expired(services.clock()):
        raise not_found("file", file_id)
    return record


async def retrieve(request: web.Request) -> web.Response:
    return respond.json(file_object(await _load(request)))


async def content(request: web.Request) -> web.StreamResponse:
    record = await _load(request)
    if not Path(record.path).exists():
        raise not_found("file content", record.id)
    ascii_name = record.filename.encode("ascii", "replace").decode().replace("?", "_")
    return web.FileResponse(record.path, headers={
        "Content-Type": "application/jsonl",
        "Content-Disposition": f'attachment; filename="{ascii_name}"; '
                               f"filename*=UTF-8''{quote(record.filename)}"})


async def delete(request: web.Request) -> web.Response:
    services, workspace = _context(request)
    file_id = (await _load(request)).id
    record = await asyncio.to_thread(services.repo.delete_file, file_id,
                                     workspace_id=workspace.id, now=services.clock())
    if record is None:
        raise not_found("file", file_id)
    services.files.remove(record.path)
    return respond.json({"id": record.id, "object": "file", "deleted": True})


async def list_files(request: web.Request) -> web.Response:
    services, workspace = _context(request)
    limit = paging.limit(request.query.get("limit"), default=100, most=10_000)
    order = request.query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise InvalidRequest(f"'order' must be asc or desc; got {order!r}.", param="order")
    files, has_more = await asyncio.to_thread(
        services.repo.list_files, workspace.id, limit=limit,
        after=request.query.get("after") or None, purpose=request.query.get("purpose") or None,
        ascending=order == "asc", now=services.clock())
    return respond.json(paging.page([file_object(f) for f in files], has_more=has_more))


def setup(app: web.Application) -> None:
    app[UPLOADS] = Counter()


def routes() -> list[Route]:
    """OpenAI's Files API: batch inputs in, output and error files out."""
    one, file_id = "/v1/files/{file_id}", Param("file_id", "path", str)
    return [
        Route("POST", "/v1/files", upload, Operation(
            "uploadFile", "Upload a JSONL batch input", "Files", answer=FileObject,
            errors=(400, 404, 408, 409, 413, 429, 503, 507), params=(IDEMPOTENCY_KEY,),
            body=Media("multipart/form-data", FileUpload))),
        Route("GET", "/v1/files", list_files, Operation(
            "listFiles", "List files", "Files", answer=FileList, errors=(400, 404), params=(
                Param("limit", "query", Annotated[int, Meta(ge=1, le=10_000)], default=100),
                Param("after", "query", str, "A file id."),
                Param("purpose", "query", Annotated[str, Meta(examples=[BATCH, BATCH_OUTPUT])],
                      "Only files of this purpose (any other lists none)."),
                Param("order", "query", Literal["asc", "desc"], default="desc")))),
        Route("GET", one, retrieve, Operation(
            "getFile", "A file object", "Files", answer=FileObject, errors=(404,),
            params=(file_id,))),
        Route("DELETE", one, delete, Operation(
            "deleteFile", "Delete a file", "Files", answer=FileDeleted,
            errors=(404, 503, 507), params=(file_id,))),
        Route("GET", one + "/content", content, Operation(
            "getFileContent", "A file's content (streamed)", "Files",
            answer=Media("application/jsonl", Union[BatchRequestRecord, OutputLine],  # noqa: UP007
                          description="The file's lines: a batch's input records, or its "
                                      "output or error lines."),
            errors=(404,), params=(file_id,))),
    ]
