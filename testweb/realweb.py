"""A piece of the real web on loopback: Debian's nginx serving real
documentation sites from Debian's doc packages under their real host names.

:func:`start_realweb` runs ``nginx`` (Debian's ``nginx-light``) in the
foreground as a subprocess (``-p DIR -c DIR/nginx.conf -g 'daemon off;'``:
pid file, logs and temporary paths all inside ``DIR``, nothing under /var or
/run) on two free ports picked at run time, one plain and one TLS, with a
self-signed certificate made by ``openssl`` whose SANs name every site. Each
site is a name-based virtual host; :attr:`RealWeb.hosts_file` maps the names
to loopback addresses for the crawler's ``DNS_HOSTS``. The sites (see
:data:`SITES`):

* ``www.sphinx-doc.org``: sphinx-doc's HTML; robots.txt with wildcard and
  ``$`` rules (``/_sources/*.txt$``: the "Show source" pages);
* ``docs.djangoproject.com``: python-django-doc's HTML; robots.txt keeps the
  crawl moderate (release notes and module sources disallowed);
* ``nodejs.org``: nodejs-doc's API pages, on ``127.0.0.2`` where nginx
  listens for http only: its https port refuses connections;
* ``www.debian.org``: debian-reference-en, with ``Crawl-delay``.

Each site is served from its document root as nginx serves any static site
(``index.html`` for a directory, a 301 to the slashed name for a directory
asked without its slash, symlinks followed: Debian's doc packages link their
JavaScript into /usr/share/javascript), and ``/robots.txt`` is ours.

The access log (:meth:`RealWeb.entries`) is one JSON object a request with
the scheme, port, host, request URI, status, ``$msec`` (the time the
response ended) and ``$request_time`` (seconds since its first byte was
read), so politeness can be judged from it.

A missing ``nginx``, ``openssl`` or doc package is a test failure naming the
fix, never a skip: ``make test`` installs them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from testweb.waiting import NoProgress, wait_until

#: polls (50 ms apart, plus each poll's own time) of a starting nginx before giving up
START_POLLS = 400
STOP_TIMEOUT = 10.0
MISSING = ("{what} is not installed: the real-web test needs it. `make test` installs it "
           "(apt-get install nginx-light openssl sphinx-doc python-django-doc nodejs-doc "
           "debian-reference-en).")
#: Loopback address of the sites served over http and https.
BOTH_SCHEMES_ADDRESS = "127.0.0.1"
#: Loopback address of the site served over http only: nothing listens on
#: the https port there, so a connection to it is refused.
HTTP_ONLY_ADDRESS = "127.0.0.2"


@dataclass(frozen=True)
class Site:
    """One documentation site: its real host name, the package directory
    served as its document root, and the robots.txt we give it."""

    host: str
    package: str
    root: str
    robots: str
    https: bool = True

    @property
    def address(self) -> str:
        return BOTH_SCHEMES_ADDRESS if self.https else HTTP_ONLY_ADDRESS

    @property
    def document_root(self) -> Path:
        """The root with symlinks resolved (debian-reference's ``docs`` is one)."""
        return Path(self.root).resolve()


def writable_copy(site: Site, directory: Path) -> Site:
    """``site`` served from a copy of its files under ``directory`` (symlinks
    followed), which a test may change while nginx serves it."""
    target = Path(directory) / site.host
    shutil.copytree(site.document_root, target, symlinks=False)
    return replace(site, root=str(target))


CRAWL_DELAY = 0.3

SITES: tuple[Site, ...] = (
    Site("www.sphinx-doc.org", "sphinx-doc", "/usr/share/doc/sphinx-doc/html",
         "User-agent: *\n"
         "Disallow: /_sources/*.txt$\n"  # the rendered pages' reST sources
         "Disallow: /*.py$\n"  # the example downloads
         "Disallow: /search.html\n"
         "Disallow: /*/search.html$\n"),
    Site("docs.djangoproject.com", "python-django-doc", "/usr/share/doc/python-django-doc/html",
         "User-agent: *\n"
         "Disallow: /releases/\n"  # 276 release notes: keeps the crawl moderate
         "Disallow: /_modules/\n"
         "Disallow: /search.html\n"
         "Allow: /releases/index.html$\n"),
    Site("nodejs.org", "nodejs-doc", "/usr/share/doc/nodejs/api",
         "User-agent: *\n"
         "Disallow: /*.json$\n"
         "Disallow: /all.html\n",  # the 5.6 MB single-page copy of every other page
         https=False),
    Site("www.debian.org", "debian-reference-en", "/usr/share/doc/debian-reference-en/docs",
         "User-agent: *\n"
         f"Crawl-delay: {CRAWL_DELAY}\n"
         "Disallow: /*.pdf$\n"),
)


@dataclass(frozen=True)
class LogEntry:
    """One request in nginx's access log."""

    scheme: str
    host: str
    port: int
    uri: str
    status: int
    end: float  # $msec: when the response's last byte was sent
    duration: float  # $request_time: since the request's first byte was read
    user_agent: str

    @property
    def start(self) -> float:
        return self.end - self.duration

    @property
    def path(self) -> str:
        return self.uri.split("?", 1)[0]


@dataclass
class RealWeb:
    """A running nginx serving :data:`SITES`; see the module docstring."""

    directory: Path
    http_port: int
    https_port: int
    sites: tuple[Site, ...]

    @property
    def hosts_file(self) -> Path:
        return self.directory / "hosts"

    @property
    def access_log(self) -> Path:
        return self.directory / "logs" / "access.log"

    def site(self, host: str) -> Site:
        return next(site for site in self.sites if site.host == host)

    def port(self, scheme: str) -> int:
        return self.http_port if scheme == "http" else self.https_port

    def origin(self, host: str, scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port(scheme)}"

    def seeds(self) -> list[str]:
        """The root of every site over http and https (the dead one included)."""
        return [f"{self.origin(site.host, scheme)}/" for site in self.sites
                for scheme in ("http", "https")]

    def entries(self) -> list[LogEntry]:
        """Every request logged so far, in log order."""
        if not self.access_log.exists():
            return []
        text = self.access_log.read_text()
        # nginx may be writing a line as we read: only whole lines count
        lines = text.split("\n")[:-1]
        return [log_entry(json.loads(line)) for line in lines if line.strip()]


def log_entry(record: dict[str, str]) -> LogEntry:
    """One line of the access log (:data:`LOG_FORMAT`, parsed as JSON)."""
    return LogEntry(record["scheme"], record["host"].lower(), int(record["port"]), record["uri"],
                    int(record["status"]), float(record["msec"]), float(record["request_time"]),
                    record["user_agent"])


class MissingTool(RuntimeError):
    """A part of the real web is not installed (the message says how to get it)."""


def require_tools(sites: tuple[Site, ...] = SITES) -> str:
    """The nginx binary; :class:`MissingTool` with the fix when a part is missing."""
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
    if nginx is None:
        raise MissingTool(MISSING.format(what="nginx"))
    if shutil.which("openssl") is None:
        raise MissingTool(MISSING.format(what="openssl"))
    for site in sites:
        if not (site.document_root / "index.html").is_file():
            raise MissingTool(MISSING.format(what=f"{site.package} ({site.root})"))
    return nginx


def free_port_pair() -> tuple[int, int]:
    """Two ports free on both loopback addresses the sites use."""
    ports: list[int] = []
    for _ in range(100):
        with socket.socket() as sock:
            sock.bind((BOTH_SCHEMES_ADDRESS, 0))
            port = sock.getsockname()[1]
        if port not in ports and _bindable(HTTP_ONLY_ADDRESS, port):
            ports.append(port)
        if len(ports) == 2:
            return ports[0], ports[1]
    raise RuntimeError("no two free loopback ports")


def _bindable(address: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((address, port))
        except OSError:
            return False
    return True


def make_certificate(directory: Path, names: list[str]) -> tuple[Path, Path]:
    """A self-signed certificate (and its key) valid for every name."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    san = ",".join(f"DNS:{name}" for name in names)
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", f"/CN={names[0]}", "-addext", f"subjectAltName={san}",
         "-keyout", str(key), "-out", str(cert)],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
    return cert, key


LOG_FORMAT = (
    "'{\"scheme\":\"$scheme\",\"host\":\"$host\",\"port\":\"$server_port\","
    "\"uri\":\"$request_uri\",\"status\":\"$status\",\"msec\":\"$msec\","
    "\"request_time\":\"$request_time\",\"user_agent\":\"$http_user_agent\"}'")


def nginx_prelude(run: Path, log_name: str, connections: int) -> str:
    """The start of an nginx configuration whose every path is inside
    ``run``, up to the ``http`` block's servers: JSON access log
    (:data:`LOG_FORMAT`) named ``log_name``, temp paths, no version banner."""
    user = "user root root;\n" if os.geteuid() == 0 else ""  # workers read the tmp dir
    return f"""{user}worker_processes 1;
pid {run}/nginx.pid;
error_log {run}/logs/error.log warn;
events {{ worker_connections {connections}; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    log_format {log_name} escape=json {LOG_FORMAT};
    access_log {run}/logs/access.log {log_name};
    client_body_temp_path {run}/temp/body;
    proxy_temp_path {run}/temp/proxy;
    fastcgi_temp_path {run}/temp/fastcgi;
    uwsgi_temp_path {run}/temp/uwsgi;
    scgi_temp_path {run}/temp/scgi;
    keepalive_timeout 30;
    server_tokens off;
"""


def nginx_conf(web: RealWeb, cert: Path, key: Path) -> str:
    """The whole configuration: every path inside ``web.directory``."""
    run = web.directory
    servers = "\n".join(_server(web, site, cert, key) for site in web.sites)
    return nginx_prelude(run, "realweb", 512) + f"""    sendfile on;
    # an unknown name gets nothing (as a mass-hosting front end would)
    server {{
        listen {BOTH_SCHEMES_ADDRESS}:{web.http_port} default_server;
        listen {HTTP_ONLY_ADDRESS}:{web.http_port} default_server;
        listen {BOTH_SCHEMES_ADDRESS}:{web.https_port} ssl default_server;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        return 421;
    }}
{servers}
}}
"""


def _server(web: RealWeb, site: Site, cert: Path, key: Path) -> str:
    listen = f"        listen {site.address}:{web.http_port};\n"
    if site.https:
        listen += (f"        listen {site.address}:{web.https_port} ssl;\n"
                   f"        ssl_certificate {cert};\n        ssl_certificate_key {key};\n")
    robots = web.directory / "robots" / f"{site.host}.txt"
    return f"""    server {{
{listen}        server_name {site.host};
        root {site.document_root};
        index index.html;
        location = /robots.txt {{
            default_type text/plain;
            alias {robots};
        }}
    }}"""


@contextmanager
def start_realweb(directory: Path, sites: tuple[Site, ...] = SITES) -> Iterator[RealWeb]:
    """Run nginx serving ``sites`` until the block ends."""
    nginx = require_tools(sites)
    directory = Path(directory)
    for sub in ("logs", "temp", "robots"):
        (directory / sub).mkdir(parents=True, exist_ok=True)
    http_port, https_port = free_port_pair()
    web = RealWeb(directory, http_port, https_port, sites)
    for site in sites:
        (directory / "robots" / f"{site.host}.txt").write_text(site.robots)
    web.hosts_file.write_text("".join(f"{site.address} {site.host}\n" for site in sites))
    cert, key = make_certificate(directory, [site.host for site in sites])
    conf = directory / "nginx.conf"
    conf.write_text(nginx_conf(web, cert, key))
    process = subprocess.Popen(
        [nginx, "-p", str(directory), "-c", str(conf), "-e", str(directory / "logs" / "error.log"),
         "-g", "daemon off;"],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_until_up(process, web)
        yield web
    finally:
        stop_server(process)


def _wait_until_up(process: subprocess.Popen[bytes], web: RealWeb) -> None:
    wanted = [(BOTH_SCHEMES_ADDRESS, web.http_port), (BOTH_SCHEMES_ADDRESS, web.https_port),
              (HTTP_ONLY_ADDRESS, web.http_port)]

    def up() -> bool:
        if process.poll() is not None:
            log = web.directory / "logs" / "error.log"
            raise RuntimeError(f"nginx exited with {process.returncode}: "
                               f"{log.read_text() if log.exists() else ''}")
        return all(accepts(address, port) for address, port in wanted)

    try:
        wait_until(up, "nginx listening on every address", patience=START_POLLS, interval=0.05)
    except NoProgress as err:
        raise RuntimeError(str(err)) from err


def accepts(address: str, port: int) -> bool:
    """Whether something accepts TCP connections on ``address:port``."""
    try:
        with socket.create_connection((address, port), timeout=1.0):
            return True
    except OSError:
        return False


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """Stop nginx gracefully (SIGQUIT: its logs are flushed), killing it if it lingers."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGQUIT)  # graceful: workers finish, logs flushed
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT)
