"""Packaging for scrapyd-deploy: one egg with the Scrapy project and its extensions."""

import re
from pathlib import Path

from setuptools import find_packages, setup

# one version, extensions/__init__.py's (the WARC writer names it in warcinfo)
VERSION = re.search(r'__version__ = "([^"]+)"', (Path(__file__).parent / "extensions" / "__init__.py").read_text())[1]

setup(
    name="webcrawler",
    version=VERSION,
    description="A scalable, polite, extensible Mercator-style web crawler on Scrapy",
    packages=find_packages(include=["crawler", "crawler.*", "extensions", "extensions.*"]),
    python_requires=">=3.11",
    entry_points={"scrapy": ["settings = crawler.settings"]},
    zip_safe=False,
)
