"""Anthropic's Message Batches API (`/v1/messages/batches…`, `x-api-key`): one package.

- `shapes`: the wire shapes, as `msgspec.Struct`s (the OpenAPI components come from them);
- `parse`: the create body, checked whole; a request that cannot run fails alone;
- `render`: jobs and rows as those shapes, the never-ran codes and the error envelope;
- `ids`: `msgbatch_` ids.

Rows of this dialect are Messages API requests (endpoint `/v1/messages`); a succeeded
row's stored response is an Anthropic `Message`.
"""
