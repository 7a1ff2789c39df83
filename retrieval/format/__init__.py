"""Format: a build as it lies on disk, the one description the build that writes it and the servers that
read it share.

The table names and schemas (`layout`), the build's `metadata.json` (`metadata`), how terms, slugs and
stored links are spelt (`terms`, `slugs`, `linkgraph`), the files a serving process maps (`mapped`, in
`.npy` files: `npyfiles`) and how many pages and chunks hold each term (`lexicon`). Ingest writes these
and search reads them; neither needs the other to do it.

May import: `retrieval.errors`, `retrieval.memory`, `retrieval.storage`, `retrieval.corpus_summary`.
The lexicon counts words in corpus_summary's terms. Never imports `retrieval.ingest`, `retrieval.search`
or the other subpackages: a change to how a build is read or written must not move its format.
"""
