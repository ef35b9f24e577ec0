-- Append a document's record to those stored under its simhash. KEYS: the
-- simhash's partition (a nearmap); ARGV: a bucket's size (bytes before a
-- split), the member (the simhash's low 56 bits, 7 bytes), the record.
-- Returns the length of the records it had.
--- @include "nearmap"
return near_append(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
