"""Per-project settings of the webcrawler Scrapy project.

Every webcrawler component and its defaults are switched on by one add-on
(:mod:`extensions.addon`, defaults in :mod:`extensions.defaults`); this file
holds only what a project really changes. Override per run with
``-s NAME=VALUE``.
"""

BOT_NAME = "webcrawler"

SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"

# scrapy linkgraph (crawler/commands/linkgraph.py)
COMMANDS_MODULE = "crawler.commands"

ADDONS = {"extensions.addon.WebcrawlerAddon": 0}

# Read by Scrapy before add-ons run, so it lives here: our caching
# asynchronous resolver (DNS_NAMESERVERS, DNS_HOSTS, DNS_CACHE_SIZE, TTLs and
# the address policy; see the DNS group of extensions/defaults.py).
TWISTED_DNS_RESOLVER = "extensions.dns.resolver.CachingResolver"

# Project overrides go below, e.g.:
# DOWNLOAD_DELAY = 1.0
# DEPTH_LIMIT = 20
