"""Theme colours as Rich styles, for cells that Textual CSS cannot reach (DataTable
cells are Rich text). Using the theme's variables keeps them readable in light, dark
and ANSI-only themes."""

from __future__ import annotations

from rich.style import Style
from textual.app import App
from textual.color import Color


def theme_style(app: App[object], variable: str) -> Style | str:
    """`$text-error` and friends as a Rich style; "" when the value is not a colour."""
    value = app.theme_variables.get(variable, "")
    try:
        return Style(color=Color.parse(value).rich_color)
    except Exception:  # "auto 60%" and the like
        return ""
