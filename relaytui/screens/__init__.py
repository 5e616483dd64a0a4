"""The TUI's screens: jobs (home), dead letter, results, upload, nodes, help, connect."""
