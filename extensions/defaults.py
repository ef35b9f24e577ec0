"""All of webcrawler's default settings, grouped by component (the enabling flag first,
then alphabetical); the add-on applies every upper-case name at ``addon`` priority."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def with_defaults(settings: Any, prefix: str) -> Any:
    """A copy of ``settings`` with this module's ``prefix*`` defaults filled in where unset."""
    settings = settings.copy()
    settings.frozen = False
    for name, value in globals().items():
        if name.startswith(prefix) and settings.get(name) is None:
            settings.set(name, value, "default")
    return settings


def checked(settings: Any, name: str, valid: Callable[[Any], bool], must: str, kind: type = float) -> Any:
    """Setting ``name`` (default: this module's) as ``kind`` (an int: a whole
    number); a ValueError naming it and its value unless it converts and
    ``valid(value)`` holds (``must``: what a valid value is)."""
    raw = settings.get(name)
    if raw is None:
        raw = globals().get(name)
    try:
        value = kind(raw)
        ok = value == value and float(raw) == value and valid(value)  # not NaN
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{name} must be {must}, got {raw!r}")
    return value


def number_setting(settings: Any, name: str, minimum: float, kind: type = float) -> Any:
    """:func:`checked` for a number (``kind``) of at least ``minimum``."""
    return checked(settings, name, lambda value: value >= minimum,
                   f"{'an integer' if kind is int else 'a number'} >= {minimum}", kind)

# --- Scrapy settings we give a crawler's values -----------------------------
# A broad crawl: polite per host, no cookies (session cookies breed traps),
# every fetched document reaches the spider (one item per document, 4xx/5xx
# included), and a depth limit so traps stay bounded even without AOPIC.
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 1
# one item per response and synchronous pipelines: a second worker would be an idle task
CONCURRENT_ITEMS = 1
COOKIES_ENABLED = False
DEPTH_LIMIT = 25
DOWNLOAD_DELAY = 0.0
DOWNLOAD_MAXSIZE = 16 * 1024 * 1024
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_WARNSIZE = 8 * 1024 * 1024
HTTPERROR_ALLOW_ALL = True
# Scrapy's RemoteControl runs Python code sent over HTTP: off on a crawl machine, as telnet is
REMOTE_CONTROL_ENABLED = False
ROBOTSTXT_OBEY = True
# Scrapy's MemoryStatsCollector without the wrapper around every stats call
STATS_CLASS = "extensions.stats.DirectStatsCollector"
TELNETCONSOLE_ENABLED = False
USER_AGENT = "webcrawler/0.1 (+https://github.com/webcrawler/webcrawler)"
# a per-response check of the callbacks, which are ours and tested
WARN_ON_GENERATOR_RETURN_VALUE = False


# --- URL filter -------------------------------------------------------------
# extensions.urls.filters.UrlFilter, built by the web spider; refusals are
# counted as urlfilter/filtered/<scheme|domain|deny|length|depth|repeats|query|user>;
# the trap filter (an item pipeline) as urlfilter/filtered/<calendar|descent> and
# urlfilter/session_stripped.
URL_FILTER_CLASS = ""  # dotted path of a class with allows(url) -> bool
URL_FILTER_DENY: list[str] = []  # regexes searched in the canonical URL
URL_FILTER_MAX_DATES = 12  # distinct dates per host and URL template (calendars; 0: no limit)
URL_FILTER_MAX_DEPTH = 0  # 0: use DEPTH_LIMIT (0 there too: unlimited)
URL_FILTER_MAX_DESCENT = 8  # links in a row each deeper below its page's directory (0: no limit)
URL_FILTER_MAX_LENGTH = 2083  # longest URL followed, in characters (longer: refused, counted as length)
URL_FILTER_MAX_QUERY_PARAMS = 12  # more query arguments: refused (0: no limit)
URL_FILTER_MAX_SEGMENT_REPEATS = 3  # a path segment seen more often: refused (0: no limit)
URL_FILTER_SCHEMES = ["http", "https"]  # schemes of the links followed
URL_FILTER_SESSION_MIN_LINKS = 3  # a token on a page's links to this many URLs: a suspected session id (0: off)
URL_FILTER_TRAPS_ENABLED = True  # extensions.urls.traps.TrapFilter: sessions, calendars, descents
URL_FILTER_TRAP_MEMORY = 65536  # entries of each of the trap filter's LRU maps


# --- Processing modules -----------------------------------------------------
# extensions.processors.registry.ProcessorRegistry: MIME pattern (exact or
# fnmatch wildcard) -> processor classes, each built once per crawl.
LINKS_IGNORE_NOFOLLOW = False  # True: follow rel="nofollow" links and pages with a nofollow robots meta tag too
# the web spider puts a page's accepted links on its item, for the LinkScheduler
# pipeline (which the add-on enables); False: the spider yields them as requests
LINKS_IN_ITEMS = True
LINKS_MAX_PER_PAGE = 10_000  # distinct links taken from one page; the rest is not read (links/capped)
LINKS_PATH_ASCENDING = False  # also crawl the directories above each fetched URL
LINKS_STRIP_PARAMS = [  # query arguments removed from links (sessions: a crawler trap)
    "jsessionid", "phpsessid", "aspsessionid", "sessionid", "session_id", "sessid", "sid"]
LINKS_RECENT_CACHE_SIZE = 65536  # links the spider yielded lately; 0: off
PROCESSING_MAX_PARSE_BYTES = 8 * 1024 * 1024  # HTML processors read at most this much of a document
# the processors run on each fetched document: MIME type (or pattern) -> processor classes
PROCESSING_MODULES = {
    "text/html": [
        "extensions.processors.html_links.HtmlLinkExtractor",
        "extensions.processors.tag_counter.TagCounter",
    ],
    "application/xhtml+xml": [
        "extensions.processors.html_links.HtmlLinkExtractor",
        "extensions.processors.tag_counter.TagCounter",
    ],
    "image/*": ["extensions.processors.image_stats.ImageStats"],
}
TAG_COUNTER_MAX_TAGS = 50  # the most common tags reported per page by the tag counter


# --- Content-seen (extensions.pipelines.contentseen) ------------------------
CONTENTSEEN_ENABLED = True
CONTENTSEEN_BACKEND = "auto"  # a backend alias ("sqlite", "redis") or class path; auto: FRONTIER_BACKEND's
CONTENTSEEN_FLUSH_INTERVAL = 5.0  # seconds between commits of the fingerprint sets
CONTENTSEEN_FOLLOW_NEAR_DUPLICATES = True  # follow the links of near-duplicates
CONTENTSEEN_MAX_TEXT_BYTES = 1024 * 1024  # text (simhash, normalised fingerprint) from at most this
CONTENTSEEN_MEMORY_ENTRIES = 16384  # fingerprints cached in memory (LRU, with their first URLs)
CONTENTSEEN_MODE = "normalised"  # or "raw": fingerprint of the body bytes
CONTENTSEEN_NEAR_DISTANCE = 3  # Hamming distance of near-duplicate simhashes
CONTENTSEEN_NEAR_ENABLED = True
CONTENTSEEN_NEAR_MIN_RESEMBLANCE = 0.6  # estimated word 3-shingle resemblance a near-duplicate needs
CONTENTSEEN_NEAR_MIN_SHINGLES = 16  # pages with fewer distinct word 3-shingles are not judged
CONTENTSEEN_REDIS_IO_THREAD = True  # redis backend: the round trips in a worker thread of its own (the reactor does not wait)
CONTENTSEEN_SQLITE_CACHE_KIB = 2048  # SQLite page cache of each of the two sets (the OS caches the rest)


# --- Host yield (extensions.pipelines.hostyield) ----------------------------
# Per host, the share of its last HOST_YIELD_WINDOW pages that were neither
# exact nor near duplicates: its pages pass on that share of their AOPIC
# cash, and below HOST_YIELD_THRESHOLD its origins are deferred (low-yield).
HOST_YIELD_ENABLED = True
HOST_YIELD_MAX_HOSTS = 65536  # hosts whose window is kept (LRU)
HOST_YIELD_THRESHOLD = 0.4  # stop a host whose yield falls below this share (0: never)
HOST_YIELD_WINDOW = 100  # pages (errors left out; this many errors in a row: no yield)


# --- Circuit breaker (extensions.breaker) -----------------------------------
# Per origin: consecutive connection failures open it; the frontier parks the
# origin's URLs, probes it again later, and defers it after the last probe.
CIRCUIT_BREAKER_ENABLED = True
CIRCUIT_BREAKER_FAILURES = 5  # consecutive connection failures (each attempt counts) that open it
CIRCUIT_BREAKER_RETRY_DELAY = 10.0  # seconds the first time; doubles with each failed probe
CIRCUIT_BREAKER_RETRY_MAX_DELAY = 300.0  # seconds: the cap of that doubling wait
CIRCUIT_BREAKER_RETRY_TIMES = 5  # failed probes before the origin's URLs are deferred for the run


# --- Pushback (extensions.pushback) ----------------------------------------
# A 429 or 503 pauses its origin (every process on Redis) for its Retry-After
# or a back-off; the URL is fetched again after the pause, no retry spent.
# A host that keeps pushing back gets a wider politeness delay for the crawl.
PUSHBACK_ENABLED = True
PUSHBACK_BACKOFF_DELAY = 10.0  # pause without a Retry-After; doubles with each pushback in a row
PUSHBACK_HOST_DELAY = 2.0  # the host's delay once PUSHBACK_WIDEN_AFTER of its URLs pushed back
PUSHBACK_HOST_DELAY_FACTOR = 2.0  # that delay multiplied by this at each further URL
PUSHBACK_HOST_MAX_DELAY = 60.0  # cap of the widened delay (as ROBOTSTXT_MAX_CRAWL_DELAY)
PUSHBACK_MAX_DELAY = 600.0  # cap of one pause (a longer Retry-After is cut to this)
PUSHBACK_MAX_PER_URL = 3  # pushbacks of one URL in a row obeyed; the next answer goes to the spider, not retried
PUSHBACK_RETRY_TIMES = 8  # pushbacks in a row (no other answer between) before the origin is deferred
PUSHBACK_STATUSES = [429, 503]  # answers that pause their origin
PUSHBACK_WIDEN_AFTER = 2  # URLs of a host that pushed back before its politeness delay widens


# --- DNS (extensions.dns) --------------------------------------------------
# extensions.dns.resolver.CachingResolver (TWISTED_DNS_RESOLVER, set in
# crawler/settings.py) and extensions.dns.middleware.AddressPolicyMiddleware.
# CAUTION: Scrapy builds the resolver from the process's settings before
# add-ons run, so the resolver reads these from settings.py or -s only, with
# the values below as its fallbacks. Scrapy's DNS_TIMEOUT (seconds for a whole
# lookup, retries included) and DNSCACHE_ENABLED keep their meanings.
ALLOW_PRIVATE_ADDRESSES = False  # True: fetch loopback, private, link-local... addresses too
ALLOWED_ADDRESS_NETWORKS: list[str] = []  # CIDRs allowed even when not public
DNS_CACHE_SIZE = 10000  # names (LRU); answers and NXDOMAINs
DNS_HOSTS = ""  # hosts(5) file whose entries override DNS; empty: none
DNS_MAX_TTL = 86400  # seconds; record TTLs are clamped to [DNS_MIN_TTL, DNS_MAX_TTL]
DNS_MIN_TTL = 60  # seconds an answer is cached at least, whatever its TTL
DNS_NAMESERVERS: list[str] = []  # "ip[:port]" (or one comma-separated string); empty: /etc/resolv.conf
DNS_NEGATIVE_TTL = 300  # seconds an NXDOMAIN is cached when the answer has no SOA
DNS_RETRIES = 2  # extra rounds over the nameservers after a per-try timeout


# --- Garbage collector (extensions.collector) -------------------------------
# Startup objects frozen out of the cyclic collector's walks and larger
# generations for the crawl; cycles are still collected, in larger batches.
GC_TUNING_ENABLED = True
GC_FREEZE = True  # gc.freeze() when the engine starts: later collections skip startup objects
GC_THRESHOLD = [10000, 10, 10]  # gc.set_threshold() for the crawl (Python's default: 700, 10, 10)


# --- Heap trim (extensions.heaptrim) ---------------------------------------
# glibc's malloc_trim(0) at an interval: free memory of the C heaps back to the kernel.
HEAP_TRIM_ENABLED = True
HEAP_TRIM_INTERVAL = 30.0  # seconds between trims


# --- Progress report (extensions.progress) ----------------------------------
LOGSTATS_INTERVAL = 0  # ProgressReporter replaces Scrapy's LogStats
PROGRESS_HOSTS_EXACT = 10_000  # hosts counted exactly up to this many, estimated beyond (~1 %; bounded memory)
PROGRESS_INTERVAL = 30.0  # seconds between progress lines; 0: summary only
PROGRESS_REPORT_FILE = ""  # JSON report written at spider_closed; empty: none


# --- WARC output (extensions.output.warc) -----------------------------------
WARC_DIR = ""  # empty: WARC output off
WARC_CDXJ = True  # a sorted CDXJ index (pywb, OutbackCDX) next to each WARC file, written as it is closed
WARC_MAX_SIZE = 1024**3  # bytes; start a new file once exceeded
WARC_OUTLINKS = False  # a metadata record per page with its outlinks (Heritrix's "outlink:" lines)
WARC_PREFIX = "webcrawler"  # first part of each WARC file's name
WARC_REVISITS = True  # revisit records for archived payloads and 304s (JOBDIR/warc-archive.sqlite3, or Redis)


# --- Frontier ---------------------------------------------------------------
# The Mercator frontier (SCHEDULER, set by the add-on). It also reads
# CONCURRENT_REQUESTS(_PER_DOMAIN, _PER_IP), DOWNLOAD_DELAY, DOWNLOAD_SLOTS
# and JOBDIR with Scrapy's meanings; its delay runs from the END of a fetch.
SCHEDULER = "extensions.frontier.scheduler.Frontier"  # the Mercator frontier as Scrapy's scheduler
FRONTIER_AOPIC = True  # AOPIC cash decides priority (extensions.aopic.ledger)
FRONTIER_AOPIC_INITIAL_CASH = 1.0  # cash of each seed
FRONTIER_AOPIC_REVISITS = 0  # OPIC passes: fetch each page up to 1 + this many times
FRONTIER_AOPIC_TAX = 0.1  # share of a fetched page's cash that goes to Lambda
FRONTIER_BACKEND = "sqlite"  # "redis" (REDIS_URL), "memory", or a backend class path (extensions.backends)
FRONTIER_BACK_QUEUES = 0  # 0: 3 x CONCURRENT_REQUESTS (Mercator's advice)
FRONTIER_BLOOM_ERROR_RATE = 0.001  # false-positive rate of the in-memory URL-seen Bloom filter (FRONTIER_SEEN_BACKEND="bloom")
FRONTIER_BLOOM_INITIAL_CAPACITY = 1_000_000  # URLs its first slice holds (it grows by slices)
FRONTIER_CHECKPOINT_INTERVAL = 5.0  # seconds between checkpoints (commit, Bloom filter file, gauges)
FRONTIER_FRONT_QUEUES = 8  # Mercator's front queues: priority levels
# most URLs accepted per host, a backstop for what host yield cannot judge; 0: unlimited
FRONTIER_HOST_BUDGET = 100_000
FRONTIER_IDLE_CLOSE = 30.0  # seconds with nothing but held origins' URLs left: defer them, close
FRONTIER_FRONT_QUEUE_WEIGHTS: list[int] = []  # empty: level i weighs i + 1
# Host leases of a shared frontier (extensions/backends/redis/dispatch.py):
FRONTIER_LEASE_MAX_LATENESS = 1.0  # seconds a held host may wait past its due time before it is given away
FRONTIER_LEASE_POLL_INTERVAL = 0.1  # seconds between host-heap polls of a process with room and nothing to do
FRONTIER_LEASE_TTL = 10.0  # seconds a killed process's hosts stay locked (renewed every third)
FRONTIER_POLITENESS_FACTOR = 0.0  # x the last fetch's duration; Mercator used 10
FRONTIER_PRIORITIZER = "extensions.frontier.prioritizer.CashPrioritizer"  # depth without AOPIC
FRONTIER_QUEUE_BUFFER = 256  # entries per head/tail buffer; Mercator used 600
FRONTIER_RECORD_REFUSALS = True  # a URL refused by a filter, the host budget or the address policy gets a row (status refused)
FRONTIER_REDIS_BLOOM_CAPACITY = 10_000_000  # URLs the shared Bloom filter is sized for (it grows beyond)
FRONTIER_REDIS_BLOOM_ERROR_RATE = 0.001  # new URLs taken for seen (never crawled), at most
FRONTIER_REDIS_IO_THREAD = True  # redis backend: the per-page Redis commands in a worker thread (the reactor does not wait)
FRONTIER_REDIS_PREFIX = "web"  # keys web:... (one crawl per prefix; see extensions/backends/redis/keys.py)
FRONTIER_REDIS_QUEUE_WINDOW = 4  # redis backend: queued URLs a host keeps in its back queue; past them new ones wait compressed in its tail (0: no tail)
FRONTIER_REDIS_RETRIES = 6  # a failing Redis call is retried this often (back-off to 2 s), each logged
FRONTIER_REDIS_TIMEOUT = 10.0  # seconds to connect and per command
FRONTIER_REFILL_BUDGET = 1024  # front-to-back moves per scheduler call
FRONTIER_SEEN_BACKEND = "exact"  # or "bloom": in memory (FRONTIER_BLOOM_*), or on Redis (FRONTIER_REDIS_BLOOM_*)
FRONTIER_SEEN_CACHE_SIZE = 65536  # popular fingerprints kept in memory
FRONTIER_SQLITE_CACHE_MB = 8  # SQLite page cache of the URL database (private memory; the OS caches the rest of the file)
FRONTIER_WRITE_AHEAD = True  # commit the URL database before a handed-out request can reach the network (once per reactor turn): a kill refetches only requests in flight
# scrapy-redis' names, same meanings, for FRONTIER_BACKEND = "redis":
MAX_IDLE_TIME_BEFORE_CLOSE = 0  # seconds a process waits for pushed seeds (see extensions/backends/redis/seeds.py)
REDIS_START_URLS_AS_SET = False  # seeds pushed with SADD rather than LPUSH
REDIS_START_URLS_BATCH_SIZE = 16  # seeds popped per poll
REDIS_START_URLS_KEY = "%(name)s:start_urls"  # redis-cli lpush web:start_urls URL
REDIS_START_URLS_POLL_INTERVAL = 1.0  # seconds between polls of that key while the crawl runs (ours)
REDIS_URL = "redis://127.0.0.1:6379/0"  # a single Redis or any node of a Redis Cluster
SCHEDULER_FLUSH_ON_START = False  # delete the crawl's keys at start
SCHEDULER_PERSIST = False  # keep the crawl's keys at close (to resume); off: deleted


# --- Link graph (extensions.frontier.linkrecord) ------------------------------
# Each fetched page's accepted outlinks by URL fingerprint, in the frontier's
# store (store.links: SQLite's links table, or on Redis each process's
# segment files); a redirect records its Location as its one outlink.
LINKGRAPH_RECORD = True  # record each fetched page's outlinks for `scrapy linkgraph`
LINKGRAPH_SEGMENT_BLOCK_BYTES = 256 * 1024  # records buffered before a frame is written (also at each checkpoint)
LINKGRAPH_SEGMENT_BYTES = 64 * 1024 * 1024  # a segment file this large is closed and a new one begun
LINKGRAPH_SEGMENTS_DIR = None  # Redis: where segments go (None: .scrapy/linksegments/<prefix>); share it across machines


# --- Re-visits (extensions.revisit) -----------------------------------------
# Continuous crawling: every fetched URL gets a next-due time and comes back to
# the frontier when due. extensions.revisit.policy.RevisitPolicy decides the
# interval (see extensions/frontier/config.py for each setting).
REVISIT_ENABLED = False  # True: the crawl does not end; fetched URLs are re-visited when due
REVISIT_ADAPTIVE_DECREASE = 0.2  # "adaptive" schedule: a change multiplies the interval by 1 - this
REVISIT_ADAPTIVE_INCREASE = 0.4  # "adaptive" schedule: no change multiplies it by 1 + this
REVISIT_GONE_AFTER = 3  # consecutive 404/410 after a 200 that make a URL gone (never re-visited)
REVISIT_INITIAL_INTERVAL = 86400.0  # seconds; a URL's first interval ("estimate": also its shortest)
REVISIT_MAX_INTERVAL = 30 * 86400.0  # seconds
REVISIT_MAX_SHARE = 0.5  # share of fetches that may be re-visits while new URLs wait
REVISIT_MIN_INTERVAL = 3600.0  # seconds
REVISIT_SCHEDULE = "estimate"  # change rate from the visit history (Cho & Garcia-Molina), or "adaptive" (Nutch)


# --- Metrics (extensions.metrics) -------------------------------------------
METRICS_PORT = 0  # TCP port of the Prometheus /metrics endpoint; 0: off
METRICS_HOST = "127.0.0.1"  # address it listens on (loopback: not exposed by default)


# --- Report (extensions.report) --------------------------------------------
# REPORT_DIR/index.html with PNG plots beside it, rewritten every
# REPORT_INTERVAL seconds and at the end of the crawl (extensions.report.extension).
REPORT_DIR = ""  # empty: no report
REPORT_INTERVAL = 30.0  # seconds between refreshes (each also takes one sample)
REPORT_MAX_HOSTS = 10_000  # hosts tallied by pages and bytes; when full, the less busy half is dropped
REPORT_MAX_SAMPLES = 1000  # samples kept for the plots over time; when full, every other one is dropped


# --- robots.txt (extensions.robots.middleware, RFC 9309) --------------------
# ROBOTSTXT_OBEY (above) switches it; ROBOTSTXT_USER_AGENT (Scrapy's) names
# the product token groups are matched by (default: USER_AGENT's first token).
ROBOTSTXT_CACHE_SIZE = 10_000  # origins whose robots.txt stays cached (LRU; ~6.5 KiB each)
ROBOTSTXT_CACHE_TTL = 86400.0  # seconds a fetched robots.txt holds
ROBOTSTXT_MAX_CRAWL_DELAY = 60.0  # Crawl-delay is clamped to this (seconds)
ROBOTSTXT_MAX_REDIRECTS = 5  # more: unavailable (no restrictions)
ROBOTSTXT_MAX_SIZE = 500 * 1024  # bytes parsed; the rest is ignored
ROBOTSTXT_RETRY_DELAY = 10.0  # first retry of an unreachable robots.txt (its origin held meanwhile); doubles
ROBOTSTXT_RETRY_MAX_DELAY = 300.0  # cap of that back-off
ROBOTSTXT_RETRY_TIMES = 5  # retries within a run; then the origin's URLs are deferred (a resume retries them)
ROBOTSTXT_SITEMAP_SEEDS = False  # crawl the Sitemap: URLs robots.txt lists
ROBOTSTXT_UNREACHABLE_PERIOD = 30 * 86400.0  # unreachable that long (a long crawl): no restrictions
