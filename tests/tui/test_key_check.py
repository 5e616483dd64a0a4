"""A key typed into the connect dialog is checked against relayd before it is saved."""

from __future__ import annotations

from typing import Any, NoReturn

from textual.widgets import Input

from relaytui.app import build_app
from relaytui.client import RelayClient, RelayError
from relaytui.screens.connect import ConnectScreen
from relaytui.screens.jobs import JobsScreen
from relaytui.settings import Settings
from relaytui.testing import FakeRelay
from tests.tui.conftest import SIZE, wait_for


class KeyedRelay(FakeRelay):
    """Takes one key; any other is refused as relayd refuses it."""

    def __init__(self, key: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.key = key

    def models(self) -> dict[str, Any]:
        if self.key != "rk_good":
            raise RelayError(401, "Invalid API key.")
        return super().models()


class DownRelay(FakeRelay):
    def models(self) -> NoReturn:
        raise RelayError(None, "cannot reach relayd at http://127.0.0.1:8080: refused")


async def test_a_refused_key_is_not_saved_and_the_dialog_says_why() -> None:
    saved, made = list[Settings](), list[str]()

    def connect(url: str, key: str) -> RelayClient:
        made.append(key)
        return KeyedRelay(key, url=url, replay=False).client(key)

    app = build_app(None, Settings("http://127.0.0.1:8080", None), save=saved.append,
                    connect=connect)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ConnectScreen))
        await pilot.press(*"rk_bad", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConnectScreen)
                       and "refused this key" in str(app.screen.reason))
        assert isinstance(app.screen, ConnectScreen)
        assert saved == [] and "Invalid API key." in app.screen.reason
        app.screen.query_one("#key", Input).value = "rk_good"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen))
        assert saved == [Settings("http://127.0.0.1:8080", "rk_good")]
        assert made == ["rk_bad", "rk_good"]


async def test_a_key_that_cannot_be_checked_is_not_saved() -> None:
    saved: list[Settings] = []
    app = build_app(None, Settings("http://127.0.0.1:8080", None), save=saved.append,
                    connect=lambda url, key: DownRelay(url=url, replay=False).client(key))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ConnectScreen))
        await pilot.press(*"rk_any", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConnectScreen)
                       and "could not be checked" in app.screen.reason)
        assert saved == []
