"""The command palette (ctrl+p) lists every action of the screen it was opened from and
of the app, named and explained by their bindings: one source for footer, help and
palette. In read-only mode the actions that write to relayd are not offered."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from relaytui.keys import WRITES

_HIDDEN = {"command_palette"}


class RelayCommands(Provider):
    def _commands(self) -> Iterator[tuple[str, str, Callable[[], object]]]:
        hidden = _HIDDEN | (WRITES if getattr(self.app, "read_only", False) else set())
        for node in (self.screen, self.app):
            for binding in node.BINDINGS:
                if (isinstance(binding, Binding) and binding.description
                        and binding.action not in hidden):
                    key = self.app.get_key_display(Binding(binding.key.split(",")[0], ""))
                    run = partial(self.app.run_action, binding.action, node)
                    yield (f"{binding.description} ({key})", binding.tooltip, run)

    async def discover(self) -> Hits:
        for name, about, run in self._commands():
            yield DiscoveryHit(name, run, help=about)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, about, run in self._commands():
            score = max(matcher.match(name), matcher.match(about) * 0.5)
            if score > 0:
                yield Hit(score, matcher.highlight(name), run, help=about)
