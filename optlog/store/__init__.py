"""Persistence: SQLModel tables, the engine (SQLite WAL or PostgreSQL), migrations, files."""
