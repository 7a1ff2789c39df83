"""The docsmcp engine: parse, chunk, embed, index and search markdown. Plain Python, no Django.

May import: nothing else in the project. The apps build on the engine, never the other way round,
so it can be tested and timed on its own. Each subpackage's own list says what it may use of the
others.

Importing it changes nothing in the process: a program that builds or serves calls
`retrieval.boot.boot()` first.
"""
