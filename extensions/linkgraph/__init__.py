"""The link graph: every crawled link, compressed as Boldi and Vigna's WebGraph
(:mod:`.codes` the codes, :mod:`.bvgraph` the writer, :mod:`.graph` the reader)."""
