-- The nodes of a cluster of dispatchers (docs/design.md §11): one row per
-- node, written at each of its heartbeats; last_seen is the database's
-- time. A node that stops keeps its row, so `ls nodes` shows how long
-- ago it was last heard from.
CREATE TABLE nodes (
    name      text        PRIMARY KEY,
    role      text        NOT NULL,
    address   text        NOT NULL,
    epoch     bigint      NOT NULL,
    last_seen timestamptz NOT NULL
);
