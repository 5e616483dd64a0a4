"""The Relay dialect's submit body (seed 000): one parser, one set of refusals.

`parse_submission` turns a decoded JSON body into a `Submission` or raises
`InvalidRequest` naming the offending field, before anything is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from daemon.domain.deadline import DEADLINE, STRICT, parse_deadline, parse_strict
from daemon.domain.errors import InvalidRequest, first_few, shown
from daemon.domain.extensions import EXTENSIONS
from daemon.domain.jobs import RowDraft
from daemon.domain.openai_input import CHAT, FileError, check_refusal, is_text, record_row
from daemon.domain.output_check import VALIDATION
from daemon.domain.tool_config import TOOL_CONFIG

MAX_ROWS = 50_000
MAX_NAME = 256
MAX_CUSTOM_ID = 512
ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
_TOP_LEVEL = frozenset({"name", "model", "requests", "priority", "webhookUrl", "cron",
                        "response_format", "validation", DEADLINE, STRICT})
_ROW_KEYS = frozenset({"custom_id", "messages", "response_format"})


@dataclass(frozen=True)
class Submission:
    name: str
    model: str
    rows: list[RowDraft]
    priority: int = 0
    webhook_url: str | None = None
    cron: str | None = None
    deadline_at: float | None = None
    strict_deadline: bool = False


def parse_submission(
    body: Any,
    *,
    models: Collection[str],
    now: float,
    check_cron: Callable[[str], None] | None = None,
    check_url: Callable[[str, str], object] | None = None,
    max_rows: int = MAX_ROWS,
) -> Submission:
    """Validate a Relay submit body. `check_cron` and `check_url` raise `InvalidRequest`;
    `max_rows`: the configured row cap."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    for key in body:
        if key not in _TOP_LEVEL:
            raise InvalidRequest(f"Unknown field '{key}'.", param=key)
    cron = _cron(body.get("cron"), check_cron)
    deadline_at = parse_deadline(body.get(DEADLINE), now=now)
    if cron and deadline_at is not None:
        raise InvalidRequest("'deadline' is a time for one job: a cron template's runs "
                             "cannot share it.", param=DEADLINE)
    strict = parse_strict(body.get(STRICT))
    if strict and deadline_at is None:
        raise InvalidRequest("'strict_deadline' needs a 'deadline'.", param=STRICT)
    webhook = _webhook(body.get("webhookUrl"), check_url)
    model = _model(body.get("model"), models)
    defaults = _check_defaults(body.get("response_format"), body.get("validation"))
    return Submission(
        name=_name(body.get("name"), now),
        model=model,
        rows=parse_rows(body.get("requests"), models=models, model=model, check_url=check_url,
                        max_rows=max_rows, defaults=defaults),
        priority=_priority(body.get("priority")),
        webhook_url=webhook,
        cron=cron,
        deadline_at=deadline_at,
        strict_deadline=strict,
    )


def _check_defaults(response_format: Any, validation: Any) -> dict[str, Any]:
    """The job's `response_format` and `validation`, checked alone (a fault names the
    top-level field), as the body fields each row takes unless it has its own."""
    defaults: dict[str, Any] = {}
    if response_format is not None:
        _checked({"response_format": response_format}, "")
        defaults["response_format"] = response_format
    if validation is not None:
        _checked({"response_format": {"type": "json_object"},
                  EXTENSIONS: {VALIDATION: validation}}, "",
                 rename=(f"{EXTENSIONS}.{VALIDATION}", "validation"))
        defaults[EXTENSIONS] = {VALIDATION: validation}
    return defaults


def _checked(body: dict[str, Any], where: str, *,
             rename: tuple[str, str] | None = None) -> None:
    """Refuse a body whose checked output cannot be set up, naming the field."""
    refusal = check_refusal(body, CHAT)
    if refusal is None:
        return
    path, message = refusal.path or "", refusal.message
    if rename is not None:
        path, message = path.replace(*rename, 1), message.replace(*rename, 1)
    raise InvalidRequest(message, param=f"{where}.{path}" if where else path,
                         code=refusal.code)


def _with_defaults(body: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """A row's body with the job's defaults where it has none of its own."""
    if not defaults or not isinstance(body, dict):
        return body
    added = dict(body)
    if "response_format" in defaults and "response_format" not in added \
            and "text" not in added:
        added["response_format"] = defaults["response_format"]
    if EXTENSIONS in defaults:
        own = added.get(EXTENSIONS)
        own = own if isinstance(own, dict) else {}
        if VALIDATION not in own and TOOL_CONFIG not in own:
            added[EXTENSIONS] = {**own, **defaults[EXTENSIONS]}
    return added


def parse_rows(requests: Any, *, param: str = "requests", models: Collection[str] = (),
               model: str | None = None,
               check_url: Callable[[str, str], object] | None = None,
               max_rows: int = MAX_ROWS,
               defaults: dict[str, Any] | None = None) -> list[RowDraft]:
    """Relay rows `{custom_id?, messages}`; a row may also be an OpenAI chat record
    `{custom_id, method, url, body}` (an uploaded OpenAI JSONL), read by the OpenAI
    dialect's own parser."""
    if requests is None:
        raise InvalidRequest("'requests' is required: a non-empty array of rows.", param=param)
    if not isinstance(requests, list):
        raise InvalidRequest("'requests' must be an array of rows.", param=param)
    if not requests:
        raise InvalidRequest("'requests' must not be empty.", param=param)
    if len(requests) > max_rows:
        raise InvalidRequest(
            f"'requests' has {len(requests)} rows; at most {max_rows} are allowed.", param=param
        )
    given = defaults or {}
    rows = [_record(i, {**r, "body": _with_defaults(r["body"], given)}, f"{param}[{i}]",
                    models=models, model=model, check_url=check_url)
            if isinstance(r, dict) and "body" in r else _row(i, r, param, given)
            for i, r in enumerate(requests)]
    _reject_duplicates(rows, param)
    return rows


def _row(index: int, row: Any, param: str, defaults: dict[str, Any]) -> RowDraft:
    """Row `index` of `param`. Every submit runs this for each of its rows, so the happy
    path builds no strings: a refusal's field path is made only when it is raised."""
    if not isinstance(row, dict):
        raise InvalidRequest("Each row must be an object with 'messages'.",
                             param=f"{param}[{index}]")
    if not _ROW_KEYS.issuperset(row):
        key = next(k for k in row if k not in _ROW_KEYS)
        raise InvalidRequest(f"Unknown row field '{key}'.", param=f"{param}[{index}].{key}")
    custom_id = row["custom_id"] if "custom_id" in row else f"row-{index + 1}"
    if (not isinstance(custom_id, str) or not custom_id or len(custom_id) > MAX_CUSTOM_ID
            or not is_text(custom_id)):
        raise InvalidRequest(
            f"'custom_id' must be a non-empty string of at most {MAX_CUSTOM_ID} characters.",
            param=f"{param}[{index}].custom_id",
        )
    messages = row.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("'messages' is required: a non-empty array.",
                             param=f"{param}[{index}].messages")
    for j, message in enumerate(messages):
        if (problem := _message_problem(message)) is not None:
            field, reason = problem
            raise InvalidRequest(reason, param=f"{param}[{index}].messages[{j}]{field}")
    body: dict[str, Any] = {"messages": messages}
    if row.get("response_format") is not None:
        body["response_format"] = row["response_format"]
    if defaults:
        body = _with_defaults(body, defaults)
    if len(body) > 1:  # only a format or the job's validation can ask for a check
        _checked(body, f"{param}[{index}]")
    return RowDraft(custom_id=custom_id, body=body)


def _record(index: int, record: dict[str, Any], where: str, *, models: Collection[str],
            model: str | None, check_url: Callable[[str, str], object] | None) -> RowDraft:
    row = record_row(index + 1, record, endpoint=CHAT, models=models, default_model=model,
                     check_url=check_url)
    if isinstance(row, FileError):
        raise InvalidRequest(row.message.replace(f"Line {index + 1}: ", "", 1),
                             param=f"{where}.{row.param}" if row.param else where,
                             code=row.code)
    if row.error is not None:
        path = f"{where}.body" + (f".{row.error_path}" if row.error_path else "")
        raise InvalidRequest(row.error, param=path, code=row.error_code)
    return row


def _message_problem(message: Any) -> tuple[str, str] | None:
    """What is wrong with a message, as (the field under it, the reason); None if
    nothing is (a known role, and content: a string or a non-empty array of parts)."""
    if not isinstance(message, dict):
        return "", "Each message must be an object with 'role' and 'content'."
    role = message.get("role")
    if not isinstance(role, str) or role not in ROLES:
        return ".role", f"'role' must be one of {', '.join(sorted(ROLES))}; got {role!r}."
    content = message.get("content")
    if not (isinstance(content, str) or (isinstance(content, list) and content)):
        return ".content", ("'content' is required: a string (or a non-empty array of "
                            "content parts).")
    return None


def _reject_duplicates(rows: list[RowDraft], param: str) -> None:
    first_seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        first = first_seen.setdefault(row.custom_id, i)
        if first != i:
            raise InvalidRequest(
                f"Duplicate custom_id '{row.custom_id}' (first used by {param}[{first}]).",
                param=f"{param}[{i}].custom_id",
            )


def _model(model: Any, models: Collection[str]) -> str:
    if model is None:
        raise InvalidRequest("'model' is required.", param="model")
    if not isinstance(model, str):
        raise InvalidRequest("'model' must be a string.", param="model")
    if model not in models:
        known = first_few(sorted(models), most=20) if models else "none configured"
        raise InvalidRequest(f"Unknown model {shown(model)}. Known models: {known}.",
                             param="model", code="model_not_found")
    return model


def _name(name: Any, now: float) -> str:
    if name is None:
        return "Batch " + datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME or not is_text(name):
        raise InvalidRequest(f"'name' must be a non-empty string of at most {MAX_NAME} "
                             "characters.", param="name")
    return name


def _priority(priority: Any) -> int:
    if priority is None:  # like `cron` and `webhookUrl`: null means the default
        return 0
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise InvalidRequest(f"'priority' must be an integer; got {priority!r}.",
                             param="priority")
    if not -1_000_000 <= priority <= 1_000_000:
        raise InvalidRequest("'priority' must be between -1000000 and 1000000.",
                             param="priority")
    return priority


def _cron(cron: Any, check: Callable[[str], None] | None) -> str | None:
    if cron is None:
        return None
    if not isinstance(cron, str):
        raise InvalidRequest("'cron' must be a 5-field cron expression string or null.",
                             param="cron")
    if check is None:
        raise InvalidRequest("Cron templates are not available yet.", param="cron")
    check(cron)
    return " ".join(cron.split())  # stored as five fields and single spaces


def _webhook(url: Any, check: Callable[[str, str], object] | None) -> str | None:
    if url is None:
        return None
    if not isinstance(url, str) or not url:
        raise InvalidRequest("'webhookUrl' must be a URL string.", param="webhookUrl")
    if check is not None:
        check(url, "webhookUrl")
    return url
