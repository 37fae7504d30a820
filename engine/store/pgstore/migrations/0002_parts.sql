-- Other packages' records kept beside the queue's (the cost ledger's),
-- by part and key, written in the queue's flushes.
CREATE TABLE parts (
    part  text  NOT NULL,
    key   text  NOT NULL,
    value bytea NOT NULL,
    PRIMARY KEY (part, key)
);
