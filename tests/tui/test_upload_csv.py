"""The upload form reads a CSV with the parser `relay submit` uses (Pilot, on the
in-memory `FakeRelay`): a header Relay does not know is refused until a prompt column
is chosen, and relayd's refusal of a row names its line in the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

from textual.pilot import Pilot
from textual.widgets import Input, Select

from relaytui.app import RelayApp, build_app
from relaytui.client import RelayError
from relaytui.screens.upload import UploadScreen
from relaytui.settings import Settings
from relaytui.testing import FakeRelay
from tests.tui.conftest import SIZE, wait_for


def app_on(fake: FakeRelay, start_dir: Path) -> RelayApp:
    return build_app(fake.client(), Settings("http://127.0.0.1:8080", "rk_test_key_123"),
                     clock=fake.clock, save=lambda _: None, start_dir=start_dir)


async def open_upload(pilot: Pilot[Any], app: RelayApp) -> UploadScreen:
    await pilot.press("u")
    upload: UploadScreen = await wait_for(
        pilot, lambda: isinstance(app.screen, UploadScreen) and app.screen)
    await wait_for(pilot, lambda: upload.query_one("#model", Select).value == "gpt-4o-mini")
    return upload


async def test_a_prompt_column_is_chosen_in_the_form(tmp_path: Path) -> None:
    path = tmp_path / "scores.csv"
    path.write_text("id,review,score\n1,good tent,5\n2,bad zip,1\n")
    fake = FakeRelay(replay=False)
    app = app_on(fake, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        upload = await open_upload(pilot, app)
        status = upload.query_one("#file-status")
        upload.query_one("#path").focus()  # the tree has it at first
        upload.query_one("#path", Input).value = str(path)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "line 1: 3 cells where one prompt was expected"
                       in str(status.render()))
        assert upload.query_one("#submit").disabled

        upload.query_one("#column", Input).value = "review"
        await wait_for(pilot, lambda: upload.rows is not None)
        assert "2 rows · prompt column 'review'" in str(status.render())
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: fake.submitted)
    [sent] = fake.submitted
    assert [row["messages"][0]["content"] for row in sent["requests"]] == ["good tent",
                                                                          "bad zip"]


class DuplicateRefusing(FakeRelay):
    """relayd refusing the third row, as its Relay parser does."""

    def submit(self, **form: Any) -> NoReturn:
        raise RelayError(400, "Duplicate custom_id 'a' (first used by requests[0]).",
                         "requests[2].custom_id")


async def test_a_refused_row_is_named_by_its_line_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "ids.csv"
    path.write_text("custom_id,prompt\na,one\n\nb,two\na,three\n")
    app = app_on(DuplicateRefusing(replay=False), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        upload = await open_upload(pilot, app)
        upload.query_one("#path").focus()  # the tree has it at first
        upload.query_one("#path", Input).value = str(path)
        await pilot.press("enter")
        await wait_for(pilot, lambda: upload.rows is not None)
        await pilot.press("ctrl+s")
        message = upload.query_one("#submit-status")
        await wait_for(pilot, lambda: "field: custom_id" in str(message.render()))
        assert ("relayd refused the job (400): line 5: Duplicate custom_id 'a' (first used "
                "by line 2).") in str(message.render())
        assert upload.query_one("#path").has_class("-invalid")


async def test_the_form_stacks_at_80_columns_and_focus_starts_in_the_tree(tmp_path: Path) -> None:
    app = app_on(FakeRelay(replay=False), tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        upload = await open_upload(pilot, app)
        tree = upload.query_one("#tree")
        assert tree.has_focus and upload.has_class("-narrow")
        await pilot.press("tab")  # the path field is next
        assert upload.query_one("#path").has_focus
        await pilot.press("shift+tab")
        form = upload.query_one("#form")
        assert tree.region.bottom <= form.region.y  # the tree above the form
        path, column = upload.query_one("#path"), upload.query_one("#column")
        assert column.region.y > path.region.y  # one field under the other
        assert path.region.right <= 80
        await pilot.resize_terminal(160, 45)
        await wait_for(pilot, lambda: upload.has_class("-wide"))
        await pilot.pause()
        assert tree.region.right <= form.region.x  # side by side again


async def test_the_estimate_shows_before_submit_and_follows_the_model(tmp_path: Path) -> None:
    path = tmp_path / "reviews.csv"
    path.write_text("prompt\ngood tent\nbad zip\n")
    fake = FakeRelay(replay=False)
    app = app_on(fake, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        upload = await open_upload(pilot, app)
        upload.query_one("#path", Input).value = str(path)
        estimate = upload.query_one("#estimate")
        await wait_for(pilot, lambda: "estimate: 2 rows" in str(estimate.render()))
        assert "drains in ~" in str(estimate.render())
        assert fake.estimated[-1] == {"model": "gpt-4o-mini", "requests": upload.rows}

        upload.query_one("#model", Select).value = "backup"
        await wait_for(pilot, lambda: "backup: 2 rows" in str(estimate.render()))
        assert fake.estimated[-1]["model"] == "backup"
    assert fake.submitted == []  # an estimate stores nothing
