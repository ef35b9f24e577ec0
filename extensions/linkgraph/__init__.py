"""The link graph: every crawled link, compressed as Boldi and Vigna's WebGraph.

A pure library (no Scrapy): :mod:`.codes` holds the instantaneous codes and
bit streams, :mod:`.bvgraph` the BVGraph writer and transpose, in WebGraph's
own file format (read back with webgraph-rs, :mod:`.graph`).
"""
