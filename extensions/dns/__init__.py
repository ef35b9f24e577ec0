"""DNS for a broad crawl: a caching asynchronous resolver, prefetch, address policy.

* :mod:`extensions.dns.resolver`: :class:`~extensions.dns.resolver.CachingResolver`,
  Scrapy's ``TWISTED_DNS_RESOLVER`` (hosts file, TTL-honouring LRU cache,
  negative caching, one query in flight per name, the address policy);
* :mod:`extensions.dns.cache`: its bounded cache and lookup-time sample;
* :mod:`extensions.dns.policy`: which addresses may be fetched
  (``ALLOW_PRIVATE_ADDRESSES``, ``ALLOWED_ADDRESS_NETWORKS``);
* :mod:`extensions.dns.middleware`: the policy before each download, and
  prefetch on the frontier's ``host_assigned`` signal.

Settings: the DNS group of :mod:`extensions.defaults`.
"""
