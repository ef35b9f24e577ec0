"""Content-seen: exact duplicates by fingerprint, near-duplicates by simhash; plain
objects (no Scrapy) the content-seen pipeline calls per response."""
