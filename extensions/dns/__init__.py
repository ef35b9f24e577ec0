"""DNS for a broad crawl: a caching asynchronous resolver, prefetch, address policy."""
