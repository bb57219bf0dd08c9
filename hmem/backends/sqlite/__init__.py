"""The embedded default: every storage port in one SQLite file (WAL mode), safe for
several threads and processes on one machine. See docs/sessions.md."""
