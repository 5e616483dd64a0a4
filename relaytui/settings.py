"""Where the TUI and the CLI find relayd: flags, then RELAY_URL / RELAY_API_KEY, then a
small config file (`$XDG_CONFIG_HOME/relay/config.toml`, else `~/.config/relay/...`),
so an operator types them once."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:8080"


@dataclass(frozen=True)
class Settings:
    url: str
    key: str | None


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "relay" / "config.toml"


def resolve(url: str | None = None, key: str | None = None, *,
            environ: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if environ is None else environ
    saved = _read(config_path(env))
    return Settings(
        url=(url or env.get("RELAY_URL") or saved.get("url") or DEFAULT_URL).rstrip("/"),
        key=key or env.get("RELAY_API_KEY") or saved.get("key") or None,
    )


def save(settings: Settings, *, environ: Mapping[str, str] | None = None) -> Path:
    """Remember the URL and key (file mode 0600: it holds a secret)."""
    path = config_path(environ)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f'url = "{_escape(settings.url)}"']
    if settings.key:
        lines.append(f'key = "{_escape(settings.key)}"')
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o600)
    return path


def _read(path: Path) -> dict[str, str]:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
