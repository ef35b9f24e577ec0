"""Reading nginx's access log while nginx writes it."""

from __future__ import annotations

import json
from pathlib import Path

from testweb.realweb import RealWeb

RECORD = {"scheme": "http", "host": "www.debian.org", "port": "8080", "uri": "/index.html", "status": "200",
          "msec": "1795520755.388", "request_time": "0.000", "user_agent": "webcrawler/0.1"}


def test_a_line_nginx_is_still_writing_is_not_read(tmp_path: Path) -> None:
    """Was: a test polling the log during a crawl read half a line and
    failed on a JSONDecodeError."""
    web = RealWeb(tmp_path, 8080, 8443, ())
    web.access_log.parent.mkdir(parents=True)
    whole = json.dumps(RECORD) + "\n"
    web.access_log.write_text(whole + whole[:60])
    assert [entry.uri for entry in web.entries()] == ["/index.html"]
    web.access_log.write_text(whole + whole)
    assert len(web.entries()) == 2
