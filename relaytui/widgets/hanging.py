"""Text whose wrapped lines hang under their first: a line too long for the widget goes
on indented (under its own indent and two more, or under a column the caller names:
the help's descriptions), never back at the left edge, where it would read as a line
of its own. It wraps again when the widget's width changes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual.content import Content
from textual.widgets import Static

Hang = Callable[[str], int]  # a line's plain text -> the column its continuations start


def under_indent(plain: str) -> int:
    """Continuations start two past the line's own indent."""
    return len(plain) - len(plain.lstrip(" ")) + 2


def hang(lines: Sequence[str], width: int, *, at: Hang = under_indent) -> Content:
    """Markup `lines` as one text of at most `width` cells a line, each wrapped line's
    continuations indented to `at(its plain text)`."""
    out: list[Content] = []
    for line in lines:
        content = Content.from_markup(line)
        if width <= 0 or content.cell_length <= width:
            out.append(content)
            continue
        column = min(at(content.plain), width // 2)
        first = content.wrap(width)[0]
        out.append(first)
        rest = content[len(first.plain):]
        rest = rest[len(rest.plain) - len(rest.plain.lstrip(" ")):]
        out += [Content(" " * column) + piece for piece in rest.wrap(width - column)]
    return Content("\n").join(out)


class HangingText(Static):
    """A Static of markup lines that hang when they wrap (see `hang`)."""

    def __init__(self, lines: Sequence[str] = (), *, at: Hang = under_indent,
                 id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines, self._at = list(lines), at

    def show_lines(self, lines: Sequence[str]) -> None:
        self._lines = list(lines)
        self._draw()

    def on_mount(self) -> None:
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        self.update(hang(self._lines, self.content_region.width, at=self._at))
