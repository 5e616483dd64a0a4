"""relay: the operator's terminal UI and scripting CLI for relayd."""
