"""The project's own Scrapy commands (``COMMANDS_MODULE``): ``scrapy linkgraph``."""
