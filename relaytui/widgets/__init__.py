"""Small widgets of the operator TUI; each reports upward with messages."""
