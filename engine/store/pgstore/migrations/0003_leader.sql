-- The leader lease of several dispatchers on this database (docs/design.md
-- §11): one row; its times are the database's (now()), never a node's.
-- epoch rises by one at every acquisition, so a write or a runner call
-- carrying an older one comes from a deposed leader.
CREATE TABLE leader (
    id         integer     PRIMARY KEY CHECK (id = 1),
    epoch      bigint      NOT NULL,
    holder     text        NOT NULL,
    address    text        NOT NULL,
    renewed_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
INSERT INTO leader (id, epoch, holder, address, renewed_at, expires_at)
    VALUES (1, 0, '', '', 'epoch', 'epoch');
