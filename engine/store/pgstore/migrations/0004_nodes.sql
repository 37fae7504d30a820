-- The nodes of a cluster of dispatchers (docs/design.md §11): one row per
-- node, written at each of its heartbeats; last_seen is the database's
-- time. A node that stops keeps its row, so `ls nodes` shows how long
-- ago it was last heard from. tls_fingerprint is the SHA-256 of the
-- certificate its API serves, which a standby pins when it forwards a
-- request to the leader ('' for a node serving plain HTTP).
CREATE TABLE nodes (
    name      text        PRIMARY KEY,
    role      text        NOT NULL,
    address   text        NOT NULL,
    epoch     bigint      NOT NULL,
    last_seen timestamptz NOT NULL,
    tls_fingerprint text  NOT NULL DEFAULT ''
);
