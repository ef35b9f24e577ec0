"""A real dynamic web application on loopback: Debian's cgit (the git web
front end) behind Debian's nginx through FastCGI (``fcgiwrap``), over git
repositories generated at start (:mod:`testweb.gitcorpus`), beside a real
static documentation site on the same nginx.

:func:`start_realapp` makes the repositories, writes cgit's configuration
(``cgitrc``: virtual URLs from ``/``, no cache, log line and file counts,
statistics, ``tar.gz`` snapshots, robots may follow links) and nginx's, and runs ``fcgiwrap`` on a
Unix socket and ``nginx`` in the foreground as subprocesses (every path
inside the run's directory, as :mod:`testweb.realweb` does), on one free
port over http:

* :data:`APP_HOST` (``git.example.org``): every path that is not one of
  cgit's static files goes to ``/usr/lib/cgit/cgit.cgi``; its robots.txt
  is the one Debian ships with cgit (snapshots and blame disallowed) with a
  ``Crawl-delay`` (:data:`APP_CRAWL_DELAY`) and the statistics pages
  disallowed too;
* :data:`STATIC_SITE` (``www.sphinx-doc.org``): sphinx-doc's HTML with its
  robots.txt from :data:`testweb.realweb.SITES`.

Such an application answers an endless-looking URL space: every file at
every commit and branch, every commit's diff and patch, logs at every
offset and per path, most of them near-copies of one another.

The access log (:meth:`RealApp.entries`) has one JSON object a request with
its host, request URI, status and times (:class:`testweb.realweb.LogEntry`).
A missing ``cgit``, ``fcgiwrap``, ``nginx`` or doc package is a test
failure naming the fix, never a skip: ``make test`` installs them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from testweb.gitcorpus import REPOSITORIES, MissingCorpus, Repository, make_repositories
from testweb.realweb import (
    BOTH_SCHEMES_ADDRESS,
    SITES,
    LogEntry,
    MissingTool,
    RealWeb,
    Site,
    accepts,
    free_port_pair,
    log_entry,
    nginx_prelude,
    require_tools,
    stop_server,
)
from testweb.waiting import NoProgress, wait_until

APP_HOST = "git.example.org"
CGIT = Path("/usr/lib/cgit/cgit.cgi")
CGIT_STATIC = Path("/usr/share/cgit")
FCGIWRAP = Path("/usr/sbin/fcgiwrap")
#: seconds; the crawler must keep it between two requests to the application
APP_CRAWL_DELAY = 0.1
#: Debian's /usr/share/cgit/robots.txt, with a Crawl-delay and the statistics disallowed
APP_ROBOTS = ("User-agent: *\n"
              f"Crawl-delay: {APP_CRAWL_DELAY}\n"
              "Disallow: /*/snapshot/*\n"
              "Disallow: /*/blame/*\n"
              "Disallow: /*/stats/\n"
              "Allow: /\n")
STATIC_SITE: Site = next(site for site in SITES if site.host == "www.sphinx-doc.org")
MISSING = ("{what} is not installed: the real-application test needs it. `make test` installs it "
           "(apt-get install cgit fcgiwrap nginx-light git sphinx-doc python-django-doc).")
START_POLLS = 400
STOP_TIMEOUT = 10.0

CGITRC = """\
# cgitrc(5); written by testweb/realapp.py
cache-size=0
virtual-root=/
css=/cgit.css
logo=/cgit.png
favicon=/favicon.ico
root-title=Example git repositories
root-desc=Documentation, runbooks and tutorials
enable-index-links=1
enable-log-filecount=1
enable-log-linecount=1
enable-http-clone=0
max-stats=quarter
snapshots=tar.gz
local-time=0
# many public instances let robots follow links (cgit's own default is nofollow)
robots=index, follow
"""


FASTCGI_PARAMS = "\n".join(f"            fastcgi_param {name} {value};" for name, value in (
    ("QUERY_STRING", "$query_string"), ("REQUEST_METHOD", "$request_method"),
    ("CONTENT_TYPE", "$content_type"), ("CONTENT_LENGTH", "$content_length"),
    ("SCRIPT_NAME", "$fastcgi_script_name"), ("REQUEST_URI", "$request_uri"),
    ("DOCUMENT_URI", "$document_uri"), ("DOCUMENT_ROOT", "$document_root"),
    ("SERVER_PROTOCOL", "$server_protocol"), ("REQUEST_SCHEME", "$scheme"),
    ("GATEWAY_INTERFACE", "CGI/1.1"), ("SERVER_SOFTWARE", "nginx"),
    ("REMOTE_ADDR", "$remote_addr"), ("REMOTE_PORT", "$remote_port"),
    ("SERVER_ADDR", "$server_addr"), ("SERVER_PORT", "$server_port"),
    ("SERVER_NAME", "$server_name"), ("HTTP_HOST", "$host:$server_port")))


@dataclass
class RealApp:
    """A running nginx with cgit and the static site; see the module docstring."""

    directory: Path
    port: int
    repositories: dict[str, Path]
    static_site: Site = STATIC_SITE

    @property
    def hosts(self) -> tuple[str, str]:
        return APP_HOST, self.static_site.host

    @property
    def hosts_file(self) -> Path:
        return self.directory / "hosts"

    @property
    def access_log(self) -> Path:
        return self.directory / "logs" / "access.log"

    def origin(self, host: str) -> str:
        return f"http://{host}:{self.port}"

    @property
    def static_web(self) -> RealWeb:
        """The static site seen as a :class:`~testweb.realweb.RealWeb` (http only)."""
        return RealWeb(self.directory, self.port, 0, (self.static_site,))

    def seeds(self) -> list[str]:
        """The root of the application and of the static site."""
        return [f"{self.origin(host)}/" for host in self.hosts]

    def entries(self) -> list[LogEntry]:
        """Every request logged so far, in log order (whole lines only)."""
        if not self.access_log.exists():
            return []
        lines = self.access_log.read_text().split("\n")[:-1]
        return [log_entry(json.loads(line)) for line in lines if line.strip()]


def require_app_tools() -> str:
    """The nginx binary; :class:`MissingTool` naming the fix when a part is missing."""
    for what, path in (("cgit", CGIT), ("fcgiwrap", FCGIWRAP)):
        if not os.access(path, os.X_OK):
            raise MissingTool(MISSING.format(what=f"{what} ({path})"))
    if shutil.which("git") is None:
        raise MissingTool(MISSING.format(what="git"))
    return require_tools((STATIC_SITE,))


def cgitrc(repositories: dict[str, Path], descriptions: dict[str, str]) -> str:
    """cgit's configuration: :data:`CGITRC` and one section per repository."""
    sections = "".join(f"\nrepo.url={name}\nrepo.path={path}\nrepo.desc={descriptions.get(name, '')}\n"
                       for name, path in repositories.items())
    return CGITRC + sections


def nginx_conf(app: RealApp, socket: Path) -> str:
    """nginx's configuration: every path inside ``app.directory``."""
    run = app.directory
    address = f"{BOTH_SCHEMES_ADDRESS}:{app.port}"
    return nginx_prelude(run, "realapp", 256) + f"""    server {{
        listen {address} default_server;
        return 421;
    }}
    server {{
        listen {address};
        server_name {APP_HOST};
        root {CGIT_STATIC};
        location = /robots.txt {{
            default_type text/plain;
            alias {run}/robots/{APP_HOST}.txt;
        }}
        location / {{
            try_files $uri @cgit;
        }}
        location @cgit {{
            # Debian's fastcgi_params, but HTTP_HOST with the port: cgit
            # makes absolute links (its Atom feeds) from it
{FASTCGI_PARAMS}
            fastcgi_param SCRIPT_FILENAME {CGIT};
            fastcgi_param PATH_INFO $uri;
            fastcgi_param CGIT_CONFIG {run}/cgitrc;
            fastcgi_pass unix:{socket};
        }}
    }}
    server {{
        listen {address};
        server_name {app.static_site.host};
        root {app.static_site.document_root};
        index index.html;
        location = /robots.txt {{
            default_type text/plain;
            alias {run}/robots/{app.static_site.host}.txt;
        }}
    }}
}}
"""


@contextmanager
def start_realapp(directory: Path, repositories: tuple[Repository, ...] = REPOSITORIES) -> Iterator[RealApp]:
    """Make the repositories, run fcgiwrap and nginx until the block ends."""
    nginx = require_app_tools()
    directory = Path(directory)
    for sub in ("logs", "temp", "robots", "repositories"):
        (directory / sub).mkdir(parents=True, exist_ok=True)
    try:
        made = make_repositories(directory / "repositories", repositories)
    except MissingCorpus as err:
        raise MissingTool(str(err)) from err
    port, _ = free_port_pair()
    app = RealApp(directory, port, made)
    (directory / "robots" / f"{APP_HOST}.txt").write_text(APP_ROBOTS)
    (directory / "robots" / f"{STATIC_SITE.host}.txt").write_text(STATIC_SITE.robots)
    (directory / "cgitrc").write_text(cgitrc(made, {r.name: r.description for r in repositories}))
    app.hosts_file.write_text("".join(f"{BOTH_SCHEMES_ADDRESS} {host}\n" for host in app.hosts))
    socket = directory / "fcgiwrap.sock"
    conf = directory / "nginx.conf"
    conf.write_text(nginx_conf(app, socket))
    with open(directory / "logs" / "fcgiwrap.log", "ab") as log:
        wrapper = subprocess.Popen([str(FCGIWRAP), "-c", "2", "-s", f"unix:{socket}"],
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = None
    try:
        _wait(lambda: socket.exists(), wrapper, "fcgiwrap's socket", directory / "logs" / "fcgiwrap.log")
        server = subprocess.Popen(
            [nginx, "-p", str(directory), "-c", str(conf), "-e", str(directory / "logs" / "error.log"),
             "-g", "daemon off;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
        _wait(lambda: accepts(BOTH_SCHEMES_ADDRESS, port), server, "nginx listening",
              directory / "logs" / "error.log")
        yield app
    finally:
        if server is not None:
            stop_server(server)
        _stop_wrapper(wrapper)


def _wait(ready: object, process: subprocess.Popen[bytes], what: str, log: Path) -> None:
    def up() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"{what}: the process exited with {process.returncode}: "
                               f"{log.read_text() if log.exists() else ''}")
        return bool(ready())  # type: ignore[operator]

    try:
        wait_until(up, what, patience=START_POLLS, interval=0.05)
    except NoProgress as err:
        raise RuntimeError(str(err)) from err


def _stop_wrapper(process: subprocess.Popen[bytes]) -> None:
    """fcgiwrap and the children it forked (its own session: one process group)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=STOP_TIMEOUT)
            return
        except subprocess.TimeoutExpired:
            continue
