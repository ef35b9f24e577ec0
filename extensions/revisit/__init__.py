"""Continuous crawling: when a fetched URL is due again.

Pure code, no I/O. :mod:`.record` declares the per-URL history the store
keeps (:class:`~.record.RevisitRecord`); :mod:`.estimate` holds the
arithmetic (Cho and Garcia-Molina's change-rate estimator and the
re-visit interval that maximises freshness for a fetch budget);
:mod:`.policy` decides, after each visit, a URL's next interval and due
time (:class:`~.policy.RevisitPolicy`); :mod:`.freshness` estimates the
crawl's freshness and age from the records; :mod:`.config` builds the
policy from the ``REVISIT_*`` settings (group ``# --- Re-visits`` of
:mod:`extensions.defaults`).
"""
