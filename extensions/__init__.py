"""webcrawler extensions: the Mercator components that plug into Scrapy.

Importable on its own; every component is switched on by
:class:`extensions.addon.WebcrawlerAddon` and configured by the defaults in
:mod:`extensions.defaults`.
"""

__version__ = "0.1.0"
