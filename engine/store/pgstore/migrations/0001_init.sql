-- The queue's state: records and events are the queue's JSON, kept as
-- bytes (the store never reads inside them).
CREATE TABLE containers (
    seq  bigint PRIMARY KEY,
    body bytea  NOT NULL
);
CREATE TABLE events (
    seq  bigint PRIMARY KEY,
    body bytea  NOT NULL
);
-- Finished containers' output, by container id.
CREATE TABLE outputs (
    id   text  PRIMARY KEY,
    body bytea NOT NULL
);
-- Flags: the scheduler's pause flag ("paused").
CREATE TABLE meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
