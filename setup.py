"""Packaging for scrapyd-deploy: one egg with the Scrapy project and its extensions."""

from setuptools import find_packages, setup

setup(
    name="webcrawler",
    version="0.1.0",
    description="A scalable, polite, extensible Mercator-style web crawler on Scrapy",
    packages=find_packages(include=["crawler", "crawler.*", "extensions", "extensions.*"]),
    package_data={"extensions.backends.redis": ["lua/*.lua", "lua/include/*.lua"]},  # the Redis scripts
    python_requires=">=3.11",
    entry_points={"scrapy": ["settings = crawler.settings"]},
    zip_safe=False,
)
