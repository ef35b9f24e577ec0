"""webcrawler extensions: the Mercator components that plug into Scrapy, switched
on by :class:`extensions.addon.WebcrawlerAddon`, defaults in :mod:`extensions.defaults`."""

__version__ = "0.1.0"
