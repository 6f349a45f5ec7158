"""Reading and writing: scene files (TOML, validated by pydantic)."""
