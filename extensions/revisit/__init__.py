"""Continuous crawling, pure code: :mod:`.estimate` (Cho and Garcia-Molina's
arithmetic), :mod:`.policy` (the next interval) and :mod:`.conditional`
(the conditional GET of a re-visit)."""
