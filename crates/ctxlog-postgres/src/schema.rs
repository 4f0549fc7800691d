//! The tables, and the migrations that make them: versioned, applied on
//! open in one transaction under an advisory lock, so that processes
//! opening a new database at once apply each migration exactly once.
//!
//! - `ctxlog_events`: one row per event. `(session, seq)` is the primary
//!   key (the expected-version check: a second writer of the same seq
//!   fails on it), `id` is unique (idempotent retries), `record` is the
//!   record exactly as the sled store keeps it (`ctxlog_store::record`:
//!   header, envelope, chain, CRC32C), `kind` its event kind (for `psql`
//!   users), `position` a global order and `tx` the writing transaction
//!   (`pg_current_xact_id()`), which subscriptions read below the oldest
//!   running transaction so that none is ever passed over.
//! - `ctxlog_heads`: each session's last seq and the chain of that record;
//!   the row an append locks, so appends to one session are serialized.
//! - `ctxlog_snapshots`: a cache of derived states (never the truth),
//!   keyed by session and reducer version.
//! - `ctxlog_search_*`: the search index (`search`), a projection of the
//!   events like the snapshots: items (a message, a part with text), their
//!   words (`tsvector`, GIN), the lifecycle marks, and what was indexed of
//!   each session.
//! - `ctxlog_schema`: the migrations applied.
//! - `ctxlog_append(…)`: an append in one round trip (see
//!   [`MIGRATIONS`] 2).

use postgres::Client;

/// The migrations, in order: (version, what it does, its SQL).
pub const MIGRATIONS: &[(i32, &str, &str)] = &[
    (
        1,
        "events, heads, snapshots",
        "CREATE TABLE ctxlog_events (
        session  uuid     NOT NULL,
        seq      bigint   NOT NULL CHECK (seq >= 1),
        id       uuid     NOT NULL UNIQUE,
        kind     smallint NOT NULL,
        record   bytea    NOT NULL,
        position bigint   GENERATED ALWAYS AS IDENTITY,
        tx       xid8     NOT NULL DEFAULT pg_current_xact_id(),
        PRIMARY KEY (session, seq)
    );
    CREATE INDEX ctxlog_events_commit_order ON ctxlog_events (tx, position);
    CREATE TABLE ctxlog_heads (
        session uuid   PRIMARY KEY,
        seq     bigint NOT NULL CHECK (seq >= 0),
        chain   bytea  NOT NULL
    );
    CREATE TABLE ctxlog_snapshots (
        session uuid    NOT NULL,
        reducer integer NOT NULL,
        seq     bigint  NOT NULL,
        value   bytea   NOT NULL,
        PRIMARY KEY (session, reducer)
    );",
    ),
    (
        2,
        "ctxlog_append: an append in one round trip",
        APPEND_FUNCTION,
    ),
    (
        3,
        "search: items, their words, marks, watermarks",
        "CREATE TABLE ctxlog_search_items (
        session uuid   NOT NULL,
        key     text   NOT NULL,
        doc     text   NOT NULL,
        seq     bigint NOT NULL,
        time    bigint NOT NULL,
        message uuid   NOT NULL,
        part    uuid,
        role    text,
        flavor  text,
        kind    text,
        tool    text,
        call    text,
        source  text,
        ids     text[] NOT NULL,
        PRIMARY KEY (session, key)
    );
    CREATE INDEX ctxlog_search_items_ids ON ctxlog_search_items USING GIN (ids);
    CREATE INDEX ctxlog_search_items_message ON ctxlog_search_items (message, doc, seq);
    CREATE INDEX ctxlog_search_items_order ON ctxlog_search_items (session, doc, seq);
    CREATE TABLE ctxlog_search_words (
        session uuid     NOT NULL,
        key     text     NOT NULL,
        chunk   integer  NOT NULL,
        words   tsvector NOT NULL,
        PRIMARY KEY (session, key, chunk)
    );
    CREATE INDEX ctxlog_search_words_words ON ctxlog_search_words USING GIN (words);
    CREATE TABLE ctxlog_search_marks (
        session uuid    NOT NULL,
        seq     bigint  NOT NULL,
        n       integer NOT NULL,
        kind    text    NOT NULL,
        mark    text    NOT NULL,
        names   uuid[]  NOT NULL,
        PRIMARY KEY (session, seq, n)
    );
    CREATE INDEX ctxlog_search_marks_names ON ctxlog_search_marks USING GIN (names);
    CREATE TABLE ctxlog_search_heads (
        session uuid    PRIMARY KEY,
        seq     bigint  NOT NULL,
        skipped boolean NOT NULL
    );",
    ),
];

/// `ctxlog_append`: an append in one statement (one round trip, one
/// transaction), when the caller knows the session's head and its chain:
/// takes the session's lock, moves the head if it is still the one given
/// (else returns `moved` with the head as it is), inserts the records (an
/// id stored already fails the call with a unique violation, and the
/// caller answers the retry in a transaction of its own, `append.rs`);
/// `ok` with the new head. The wake-up is rung after the commit (`fast.rs`).
const APPEND_FUNCTION: &str = "
    CREATE FUNCTION ctxlog_append(
        p_session uuid, p_head bigint, p_chain bytea,
        p_seqs bigint[], p_ids uuid[], p_kinds smallint[], p_records bytea[],
        p_last_chain bytea, p_lock integer
    ) RETURNS TABLE (o_status text, o_head bigint, o_chain bytea)
    LANGUAGE plpgsql AS $fn$
    #variable_conflict use_column
    DECLARE
        cur_seq bigint;
        cur_chain bytea;
        last bigint := p_seqs[array_upper(p_seqs, 1)];
    BEGIN
        PERFORM pg_advisory_xact_lock(p_lock, hashtext(p_session::text));
        -- The head moves only if it is the one the records follow.
        UPDATE ctxlog_heads SET seq = last, chain = p_last_chain
            WHERE session = p_session AND seq = p_head AND chain = p_chain;
        IF NOT FOUND THEN
            SELECT h.seq, h.chain INTO cur_seq, cur_chain
                FROM ctxlog_heads h WHERE h.session = p_session;
            IF FOUND AND cur_seq > 0 OR p_head <> 0 THEN
                RETURN QUERY SELECT 'moved'::text, coalesce(cur_seq, 0), coalesce(cur_chain, p_chain);
                RETURN;
            END IF;
            -- A new session (or one whose first append failed).
            INSERT INTO ctxlog_heads (session, seq, chain) VALUES (p_session, last, p_last_chain)
                ON CONFLICT (session) DO UPDATE SET seq = EXCLUDED.seq, chain = EXCLUDED.chain;
        END IF;
        -- An id stored already fails this with a unique violation: the
        -- caller answers the retry on its slow path.
        INSERT INTO ctxlog_events (session, seq, id, kind, record)
            SELECT p_session, u.* FROM unnest(p_seqs, p_ids, p_kinds, p_records) AS u;
        RETURN QUERY SELECT 'ok'::text, last, p_last_chain;
    END
    $fn$;";

/// The advisory lock key migrations are applied under ("ctxlog" in ASCII).
const MIGRATION_LOCK: i64 = 0x6374_786c_6f67;

/// The schema version this build knows.
pub fn current_version() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}

/// Why the schema could not be brought up to date.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The database was migrated by a newer ctxlog.
    #[error("the database's ctxlog schema is version {found}, newer than this ctxlog knows ({known}): use a newer ctxlog")]
    Newer {
        /// The version found.
        found: i32,
        /// The newest this build knows.
        known: i32,
    },
    /// A statement failed.
    #[error(transparent)]
    Sql(#[from] postgres::Error),
}

/// Applies the migrations not yet applied; returns the versions applied now.
pub fn migrate(client: &mut Client) -> Result<Vec<i32>, SchemaError> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS ctxlog_schema (
            version     integer     PRIMARY KEY,
            description text        NOT NULL,
            applied_at  timestamptz NOT NULL DEFAULT now()
        )",
    )?;
    let found: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM ctxlog_schema", &[])?
        .get(0);
    let known = current_version();
    if found > known {
        return Err(SchemaError::Newer { found, known });
    }
    let mut applied = Vec::new();
    for &(version, description, sql) in MIGRATIONS.iter().filter(|m| m.0 > found) {
        tx.batch_execute(sql)?;
        tx.execute(
            "INSERT INTO ctxlog_schema (version, description) VALUES ($1, $2)",
            &[&version, &description],
        )?;
        applied.push(version);
    }
    tx.commit()?;
    Ok(applied)
}
