"""The chunk store: caller-chunked, caller-embedded items written in place, batch by batch.

Unlike a build, a store is not made from markdown: a client sends chunks with their vectors
(the citeloom profile's `store_chunks`) and searches them. One store holds one project.

May import: `retrieval.errors`, `retrieval.format.layout`, `retrieval.search.fusion`, `retrieval.storage`.
"""
