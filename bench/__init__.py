"""Relay's benchmark harness: real `relayd simulate` and `relayd serve` processes, the
scenarios of the benchmark issue, a plain aiohttp reference client measured side by
side, one table and a JSON file of figures. Run `just bench` or `python -m bench`."""
