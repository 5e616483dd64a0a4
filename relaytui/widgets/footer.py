"""The footer of every screen, fitted to the terminal: when its keys do not fit on one
line it goes compact, then lets the command palette's key go, then the screen's own keys
from the last one declared (screens declare their keys most useful first); `?` and `q`
always stay. Every key still works, and `?` lists them all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from relaytui.keys import APP_BINDINGS

# The app's keys shown in the footer (help, quit): never dropped.
KEPT = frozenset(b.action for b in APP_BINDINGS if not isinstance(b, tuple) and b.show)


@dataclass(frozen=True)
class Fit:
    compact: bool
    palette: bool
    shown: tuple[bool, ...]  # for each key, in order


def fit(keys: Sequence[tuple[int, bool]], palette: int | None, width: int) -> Fit:
    """How `keys` ((width of key and description, kept) each) and the palette's key fit
    in `width` cells: roomy if they can, else compact, without the palette, then without
    the last droppable keys."""
    every = tuple(True for _ in keys)
    if _width(keys, every, palette, compact=False) <= width:
        return Fit(False, palette is not None, every)
    if _width(keys, every, palette, compact=True) <= width:
        return Fit(True, palette is not None, every)
    shown = list(every)
    for i in reversed(range(len(keys))):
        if _width(keys, shown, None, compact=True) <= width:
            break
        if not keys[i][1]:
            shown[i] = False
    return Fit(True, False, tuple(shown))


def _width(keys: Sequence[tuple[int, bool]], shown: Sequence[bool], palette: int | None, *,
           compact: bool) -> int:
    # Footer's CSS: " k " + "desc " roomy; "k desc" and a margin of 1 compact; the
    # palette's key, docked right, has a border and padding of its own.
    each = 2 if compact else 3
    total = sum(w + each for (w, _), on in zip(keys, shown, strict=True) if on)
    return total + (palette + 3 if palette is not None else 0)


class RelayFooter(Footer):
    async def recompose(self) -> None:
        await super().recompose()  # the bindings changed: a new set of keys
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        if not self.size.width:
            return
        keys = [k for k in self.query(FooterKey) if not k.has_class("-command-palette")]
        palette = next(iter(self.query(FooterKey).filter(".-command-palette")), None)
        found = fit([(_label(k), k.action in KEPT) for k in keys],
                    None if palette is None else _label(palette), self.size.width)
        self.compact = found.compact
        if palette is not None:
            palette.display = found.palette
        for key, shown in zip(keys, found.shown, strict=True):
            key.display = shown


def _label(key: FooterKey) -> int:
    return cell_len(key.key_display) + cell_len(key.description)
