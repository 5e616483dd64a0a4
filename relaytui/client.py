"""The one HTTP client of relayd (httpx), used by the demo, the CLI and the TUI."""

from __future__ import annotations

from typing import Any

import httpx


class RelayError(Exception):
    """relayd answered with its error envelope (or could not be reached)."""

    def __init__(self, status: int | None, message: str, param: str | None = None) -> None:
        super().__init__(message if param is None else f"{message} (field: {param})")
        self.status = status
        self.message = message
        self.param = param


class RelayClient:
    def __init__(self, url: str, key: str, *, timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.http = httpx.Client(base_url=url.rstrip("/"), timeout=timeout,
                                 headers={"Authorization": f"Bearer {key}"},
                                 transport=transport)

    def close(self) -> None:
        self.http.close()

    def healthy(self) -> bool:
        try:
            return self.http.get("/healthz").status_code == 200
        except httpx.HTTPError:
            return False

    def submit(self, *, model: str, requests: list[dict[str, Any]], name: str | None = None,
               priority: int = 0, cron: str | None = None,
               webhook_url: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "requests": requests, "priority": priority}
        optional = {"name": name, "cron": cron, "webhookUrl": webhook_url}
        body.update({k: v for k, v in optional.items() if v is not None})
        return self._call("POST", "/v1/batches", json=body)

    def job(self, job_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/batches/{job_id}")

    def jobs(self, **params: Any) -> dict[str, Any]:
        return self._call("GET", "/v1/batches", params=params)

    def results(self, job_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/batches/{job_id}/results")

    def dead_letter(self, job_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/batches/{job_id}/dead_letter")

    def cancel(self, job_id: str) -> dict[str, Any]:
        return self._call("POST", f"/v1/batches/{job_id}/cancel")

    def models(self) -> dict[str, Any]:
        return self._call("GET", "/v1/models")

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            reply = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise RelayError(None, f"cannot reach relayd at {self.http.base_url}: {exc}") \
                from exc
        if reply.is_success:
            return reply.json()
        try:
            err = reply.json()["error"]
            raise RelayError(reply.status_code, err["message"], err.get("param"))
        except (ValueError, KeyError, TypeError):
            raise RelayError(reply.status_code, reply.text[:200]) from None
