"""The docsmcp engine: parse, chunk, embed, index and search markdown. Plain Python, no Django."""
