"""The upload form with a template (Pilot, on the in-memory `FakeRelay`): the file is
read as a table, the preview shows the first rows' prompts as the template fills them
before anything is sent, a template naming a column the table lacks is refused in the
form, and the table goes as an OpenAI chat batch (its records uploaded)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from textual.widgets import DataTable, Input

from relaytui.testing import FakeRelay
from tests.tui.conftest import SIZE, wait_for
from tests.tui.test_upload_csv import app_on, open_upload

TABLE = ('id,review,stars\n'
         'a,"Good, solid, cheap",5\n'
         'b,"two\nlines ✓",3\n'
         'c,"""quoted"" 日本",4\n')


def preview(table: DataTable[object]) -> list[list[str]]:
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


async def test_the_preview_shows_the_template_filled_before_anything_is_sent(
        tmp_path: Path) -> None:
    path = tmp_path / "reviews.csv"
    path.write_text(TABLE, encoding="utf-8")
    fake = FakeRelay(replay=False)
    app = app_on(fake, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        upload = await open_upload(pilot, app)
        status = upload.query_one("#file-status")
        upload.query_one("#template", Input).value = "Rate {review} ({stars}/5) {{ok}}"
        upload.query_one("#path", Input).value = str(path)
        await wait_for(pilot, lambda: upload.rows is not None)
        assert "3 rows · a table; the template fills review, stars" in str(status.render())
        table = upload.query_one("#preview", DataTable)
        assert preview(table) == [  # a cell's newlines shown as spaces
            ["row-1", "user", "Rate Good, solid, cheap (5/5) {ok}"],
            ["row-2", "user", "Rate two lines ✓ (3/5) {ok}"],
            ["row-3", "user", 'Rate "quoted" 日本 (4/5) {ok}']]
        assert not fake.uploaded and not fake.created  # nothing sent yet
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: fake.created)
    [created] = fake.created
    assert created["endpoint"] == "/v1/chat/completions"
    assert created["metadata"]["name"] == "reviews.csv"
    assert [r["custom_id"] for r in created["records"]] == ["row-1", "row-2", "row-3"]
    assert created["records"][1]["body"] == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Rate two\nlines ✓ (3/5) {ok}"}]}
    [(filename, _)] = fake.uploaded.values()
    assert filename == "reviews.jsonl"


async def test_a_template_naming_a_missing_column_is_refused_in_the_form(
        tmp_path: Path) -> None:
    path = tmp_path / "items.parquet"
    pq.write_table(pa.table({"n": [1, 2], "text": ["x", None]}), path)
    fake = FakeRelay(replay=False)
    app = app_on(fake, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        upload = await open_upload(pilot, app)
        status = upload.query_one("#file-status")
        upload.query_one("#path", Input).value = str(path)
        upload.query_one("#template", Input).value = "{review}"
        await wait_for(pilot, lambda: "which the table does not have" in str(status.render()))
        assert upload.query_one("#submit").disabled
        upload.query_one("#template", Input).value = "#{n}: {text"
        await wait_for(pilot, lambda: "template: malformed template" in str(status.render()))
        assert upload.query_one("#template").has_class("-invalid")
        upload.query_one("#template", Input).value = "#{n}: {text}"
        await wait_for(pilot, lambda: "row 2: the 'text' value is empty" in str(
            status.render()))
        assert upload.query_one("#submit").disabled
    assert not fake.uploaded and json.dumps(fake.created) == "[]"
