//! The store's SQL, written once for both databases: one [`Tx`] ([`SqlTx`]) over a
//! driver ([`Driver`]) that only runs text with bound [`Arg`]s, and a [`Dialect`] that
//! holds every place the two databases spell something differently.
//!
//! What differs, and so all that [`Dialect`] answers: the parameter marks (`?1`, `$1`),
//! an `IN` list (one mark per value on SQLite, one array on PostgreSQL: `= ANY`), case-
//! insensitive matching (`LIKE`, `ILIKE`), a tag condition (a quoted element inside the
//! JSON text, `@>` on `jsonb`), how `NULL`s sort (SQLite's order spelled out for
//! PostgreSQL so one index serves both directions), "no limit", JSON text in and out,
//! and index hints (SQLite's planner has no statistics: see [`Dialect::from`]).
//! Everything else, including which conditions are refused, is the same text for both.

use serde_json::Value;

use crate::brazil::money::Money;

use super::{
    ColumnType, Cond, Kind, Order, Pointed, Query, RawPage, Remembered, StoreError, Tx,
    changes_membership, identity, like_escape, parse_doc,
};

/// One bound value, whatever the driver.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Arg {
    Null,
    Text(String),
    Int(i64),
    /// A JSON value (a tags column on PostgreSQL).
    Json(Value),
    /// An array of one column type (PostgreSQL's `= ANY`).
    List(ColumnType, Vec<Self>),
}

impl Arg {
    /// `v` as a value of a column of type `ty`: the one conversion both stores bind.
    pub(crate) fn of(v: &Value, ty: ColumnType) -> Self {
        let or_null = |a: Option<Self>| a.unwrap_or(Self::Null);
        match ty {
            ColumnType::Text => or_null(match v {
                Value::Null => None,
                Value::String(s) => Some(Self::Text(s.clone())),
                Value::Bool(b) => Some(Self::Text(if *b { "1" } else { "0" }.to_owned())),
                other => Some(Self::Text(other.to_string())),
            }),
            // The nearest centavo: a stored amount has at most two decimals already.
            ColumnType::Money => or_null(
                match v {
                    Value::Number(n) => n.as_f64(),
                    Value::String(s) => s.parse().ok(),
                    _ => None,
                }
                .map(|brl| Self::Int(Money::round_brl(brl).cents())),
            ),
            ColumnType::Integer => or_null(match v {
                // Integers as they are, anything else truncated (SQLite's conversion).
                Value::Number(n) => Some(Self::Int(n.as_i64().unwrap_or_else(|| {
                    #[allow(clippy::cast_possible_truncation)]
                    let t = n.as_f64().unwrap_or_default() as i64;
                    t
                }))),
                Value::Bool(b) => Some(Self::Int(i64::from(*b))),
                Value::String(s) => s.parse().ok().map(Self::Int),
                _ => None,
            }),
            ColumnType::Tags => match v {
                Value::Null => Self::Null,
                other => Self::Json(other.clone()),
            },
        }
    }
}

/// One column of a result row.
#[derive(Clone, Debug)]
pub(crate) enum Cell {
    Null,
    Int(i64),
    Text(String),
}

impl Cell {
    fn text(self) -> Result<String, StoreError> {
        match self {
            Self::Text(s) => Ok(s),
            other => Err(StoreError(format!("expected text, got {other:?}"))),
        }
    }

    fn int(self) -> Result<i64, StoreError> {
        match self {
            Self::Int(n) => Ok(n),
            other => Err(StoreError(format!("expected an integer, got {other:?}"))),
        }
    }
}

/// What one driver does inside one transaction: run SQL text with bound arguments.
/// Preparing and caching statements, counting round trips, and converting [`Arg`]s
/// are the driver's; the SQL is [`SqlTx`]'s.
pub(crate) trait Driver {
    /// How this driver's database spells what differs.
    const DIALECT: Dialect;
    /// The rows of `sql`, each as its cells.
    fn rows(&mut self, sql: &str, args: &[Arg]) -> Result<Vec<Vec<Cell>>, StoreError>;
    /// The first column of every row of `sql`, as text (documents, ids): no cells.
    fn texts(&mut self, sql: &str, args: &[Arg]) -> Result<Vec<String>, StoreError>;
    /// How many rows `sql` changed.
    fn execute(&mut self, sql: &str, args: &[Arg]) -> Result<u64, StoreError>;
    /// Runs `sql`, a write whose answer nobody reads, now or with the transaction's next
    /// statement or end, whichever the driver likes: its error surfaces there, always
    /// before the transaction (or a group writer) is decided. SQLite's writes are
    /// calls, not round trips: at once.
    fn defer(&mut self, sql: &str, args: Vec<Arg>) -> Result<(), StoreError> {
        self.execute(sql, &args).map(drop)
    }
}

/// The two SQL dialects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// The mark of the `n`th (1-based) argument. Both are numbered, so one argument
    /// (the organization) serves several places of a statement.
    pub(crate) fn mark(self, n: usize) -> String {
        match self {
            Self::Sqlite => format!("?{n}"),
            Self::Postgres => format!("${n}"),
        }
    }

    /// The mark of a JSON document argument (bound as its text).
    fn json_mark(self, n: usize) -> String {
        match self {
            Self::Sqlite => self.mark(n),
            Self::Postgres => format!("${n}::text::json"),
        }
    }

    /// A JSON column read back as text.
    fn json_text(self, col: &str) -> String {
        match self {
            Self::Sqlite => col.to_owned(),
            Self::Postgres => format!("{col}::text"),
        }
    }

    /// `col` is one of `vs` (not empty).
    fn in_list(self, col: &str, vs: &[Value], ty: ColumnType, args: &mut Args) -> String {
        match self {
            Self::Sqlite => {
                let marks: Vec<String> = vs.iter().map(|v| args.push(Arg::of(v, ty))).collect();
                format!("{col} IN ({})", marks.join(","))
            }
            // One value is an equality: a generic plan of `= ANY($n)` knows neither how
            // many values come nor which, and on a small table scans it whole.
            Self::Postgres if vs.len() == 1 => {
                format!("{col} = {}", args.push(Arg::of(&vs[0], ty)))
            }
            Self::Postgres => {
                let list = vs.iter().map(|v| Arg::of(v, ty)).collect();
                format!("{col} = ANY({})", args.push(Arg::List(ty, list)))
            }
        }
    }

    /// `col` contains `needle` (`mark`: `%needle%`, escaped), ASCII letters folded.
    /// SQLite's `LIKE` folds ASCII only; so does `ILIKE` on PostgreSQL's "C"-collated
    /// columns. Non-text columns are matched by their text on both.
    fn contains(self, col: &str, ty: ColumnType, mark: &str) -> String {
        match (self, ty) {
            (Self::Sqlite, _) => format!("{col} LIKE {mark} ESCAPE '\\'"),
            (Self::Postgres, ColumnType::Text) => format!("{col} ILIKE {mark} ESCAPE '\\'"),
            (Self::Postgres, _) => format!("{col}::text ILIKE {mark} ESCAPE '\\'"),
        }
    }

    /// The tags column `col` holds `tag`.
    fn has_tag(self, col: &str, tag: &str, args: &mut Args) -> String {
        match self {
            Self::Sqlite => {
                // The element as it appears inside the stored JSON text: quoted.
                let quoted = Value::String(tag.to_owned()).to_string();
                let mark = args.push(Arg::Text(format!("%{}%", like_escape(&quoted))));
                format!("{col} LIKE {mark} ESCAPE '\\'")
            }
            Self::Postgres => {
                let mark = args.push(Arg::Json(Value::Array(vec![Value::String(tag.to_owned())])));
                format!("{col} @> {mark}")
            }
        }
    }

    /// The sort key's direction: `NULL`s first going up and last going down, which is
    /// SQLite's own order and how PostgreSQL's indexes are built, so one index serves
    /// both directions on both.
    fn key_order(self, order: Order) -> &'static str {
        match (self, order) {
            (Self::Sqlite, Order::Asc) => "ASC",
            (Self::Sqlite, Order::Desc) => "DESC",
            (Self::Postgres, Order::Asc) => "ASC NULLS FIRST",
            (Self::Postgres, Order::Desc) => "DESC NULLS LAST",
        }
    }

    /// `LIMIT` without a limit (`OFFSET` needs one on SQLite).
    fn no_limit(self) -> &'static str {
        match self {
            Self::Sqlite => "-1",
            Self::Postgres => "ALL",
        }
    }

    /// The page's documents, each found by primary key from the page's id: what follows
    /// the page in the statement's `FROM`, naming them `t` (with `doc`, and the `via`
    /// column of `pointed`, which its join reads), and the `WHERE` that matches them to it.
    ///
    /// SQLite: a `CROSS JOIN` keeps the page the outer loop (its planner never reorders
    /// one). PostgreSQL: [`Dialect::lookup`].
    fn by_id(self, t: &str, pointed: Option<Pointed>) -> (String, String) {
        let org = self.mark(1);
        match self {
            Self::Sqlite => (
                format!("CROSS JOIN {t}"),
                format!(" WHERE {t}.org = {org} AND {t}.id = page.page_id"),
            ),
            Self::Postgres => {
                let columns =
                    pointed.map_or_else(|| "doc".to_owned(), |p| format!("doc, {}", p.via));
                let found = self.lookup(t, &columns, "page.page_id");
                (format!("CROSS JOIN {found} AS {t}"), String::new())
            }
        }
    }

    /// The join of a page's rows (named `t`, [`Dialect::by_id`]) to the documents their
    /// `via` column names, as `pointed` with its `id` and `column`; `NULL`s where none.
    ///
    /// SQLite looks each one up by primary key from a plain `LEFT JOIN`. PostgreSQL:
    /// [`Dialect::lookup`].
    fn pointed(self, t: &str, p: Pointed) -> String {
        let table = p.kind.table();
        match self {
            Self::Sqlite => format!(
                " LEFT JOIN {table} AS pointed ON pointed.org = {org} AND pointed.id = {t}.{via}",
                org = self.mark(1),
                via = p.via,
            ),
            Self::Postgres => {
                let found = self.lookup(
                    table,
                    &format!("id, {}", p.column),
                    &format!("{t}.{}", p.via),
                );
                format!(" LEFT JOIN {found} AS pointed ON TRUE")
            }
        }
    }

    /// `columns` of the organization's row of `table` whose id is `id` (an expression
    /// of the outer query), as a `LATERAL` subquery with a `LIMIT` (PostgreSQL).
    ///
    /// PostgreSQL flattens a plain join or subquery, and the generic plan every session
    /// runs (`GENERIC_PLANS`, `store/postgres.rs`) joined a page's ten-odd rows to the
    /// organization's rows with a hash join over a scan of all of them: while the table
    /// was small, and for as long as the organization's estimated share of it (the
    /// table's rows over its organizations, whatever the organization asking) stays
    /// small, so a large organization among many small ones was scanned whole at every
    /// page. A `LATERAL` subquery with a `LIMIT` is never flattened: one primary-key
    /// lookup per row of the page, at every size.
    fn lookup(self, table: &str, columns: &str, id: &str) -> String {
        format!(
            "LATERAL (SELECT {columns} FROM {table} AS found \
             WHERE found.org = {org} AND found.id = {id} LIMIT 1)",
            org = self.mark(1)
        )
    }

    /// The table a page is searched in. An equality on a selective column (a document
    /// number, a parent's id) leaves a few rows: SQLite is told to search them by that
    /// column's index (`<table>_<column>`, migration 1), since without statistics (no
    /// `ANALYZE`) its planner takes `org = ?` for as selective and walks the whole
    /// organization in sort order instead (a debtor's creation checked its document
    /// number against every debtor). PostgreSQL's planner has statistics.
    fn from(self, kind: Kind, conds: &[Cond]) -> String {
        let t = kind.table();
        let narrowing = conds.iter().find_map(|c| match c {
            Cond::Eq(c, _) | Cond::In(c, _) if kind.is_selective(c) => Some(*c),
            _ => None,
        });
        match (self, narrowing) {
            (Self::Sqlite, Some(c)) => format!("{t} INDEXED BY {t}_{c}"),
            _ => t.to_owned(),
        }
    }
}

/// A statement's arguments, numbered as they are pushed.
pub(crate) struct Args {
    dialect: Dialect,
    pub(crate) list: Vec<Arg>,
}

impl Args {
    fn new(dialect: Dialect) -> Self {
        Self {
            dialect,
            list: Vec::new(),
        }
    }

    /// Adds `a`; its mark.
    fn push(&mut self, a: Arg) -> String {
        self.list.push(a);
        self.dialect.mark(self.list.len())
    }
}

/// The `WHERE` clause of `conds` in `org`, with its arguments (the organization is the
/// first, so `mark(1)` names it anywhere in the statement).
pub(crate) fn where_clause(
    dialect: Dialect,
    kind: Kind,
    org: &str,
    conds: &[Cond],
) -> Result<(String, Args), StoreError> {
    let mut args = Args::new(dialect);
    let mut sql = format!(" WHERE org = {}", args.push(Arg::Text(org.to_owned())));
    for c in conds {
        let clause = match c {
            Cond::Eq(col, v) | Cond::Ge(col, v) | Cond::Le(col, v) => {
                kind.check_column(col)?;
                let op = match c {
                    Cond::Eq(..) => "=",
                    Cond::Ge(..) => ">=",
                    _ => "<=",
                };
                let mark = args.push(Arg::of(v, kind.column_type(col)));
                format!("{col} {op} {mark}")
            }
            Cond::In(col, vs) => {
                kind.check_column(col)?;
                if vs.is_empty() {
                    "FALSE".to_owned()
                } else {
                    dialect.in_list(col, vs, kind.column_type(col), &mut args)
                }
            }
            Cond::Null(col, is_null) => {
                kind.check_column(col)?;
                let not = if *is_null { "" } else { " NOT" };
                format!("{col} IS{not} NULL")
            }
            Cond::Search(cols, needle) => {
                // Searching no column finds nothing.
                if cols.is_empty() {
                    "FALSE".to_owned()
                } else {
                    let mark = args.push(Arg::Text(format!("%{}%", like_escape(needle))));
                    let mut ors = Vec::with_capacity(cols.len());
                    for col in cols {
                        kind.check_column(col)?;
                        ors.push(dialect.contains(col, kind.column_type(col), &mark));
                    }
                    format!("({})", ors.join(" OR "))
                }
            }
            Cond::Tag(col, tag) => {
                kind.check_column(col)?;
                if kind.column_type(col) != ColumnType::Tags {
                    return Err(StoreError(format!(
                        "{}.{col} is not a tags column",
                        kind.table()
                    )));
                }
                dialect.has_tag(col, tag, &mut args)
            }
        };
        sql.push_str(" AND ");
        sql.push_str(&clause);
    }
    Ok((sql, args))
}

/// The statement that stores a document and its indexed columns. Arguments in order:
/// org, id, created_at, the document's text, then the kind's columns. An upsert, not a
/// replace: a replace is a delete plus an insert, which the tally triggers would count
/// as a new row; an update fires no insert trigger.
fn upsert_sql(dialect: Dialect, kind: Kind) -> String {
    let cols = kind.columns();
    let names: String = cols.iter().map(|c| format!(", {}", c.name)).collect();
    let marks: String = (0..cols.len())
        .map(|i| format!(", {}", dialect.mark(i + 5)))
        .collect();
    let sets: String = cols
        .iter()
        .map(|c| format!(", {n} = excluded.{n}", n = c.name))
        .collect();
    format!(
        "INSERT INTO {} (org, id, created_at, doc{names}) VALUES ({}, {}, {}, {}{marks}) \
         ON CONFLICT (org, id) DO UPDATE SET created_at = excluded.created_at, doc = excluded.doc{sets}",
        kind.table(),
        dialect.mark(1),
        dialect.mark(2),
        dialect.mark(3),
        dialect.json_mark(4),
    )
}

/// One page of `q`, read one of two ways by where it starts:
///
/// * past [`read_direct`]'s bound, the page's ids from an index alone (skipping `offset`
///   entries costs index steps, not document reads), then only those documents, by
///   primary key ([`Dialect::by_id`]);
/// * from the start, or near it, the documents with their entries, in the same walk of
///   the same index: a primary-key descent per row (three index pages and a key compare
///   at each level on PostgreSQL) costs more than the few documents skipped.
///
/// With `pointed` ([`Pointed`]), each row also carries the id and column of the document
/// its `via` column names (both `NULL` when there is none), joined to the page's ten-odd
/// rows: read again in a statement of its own, the page's `via` values would cost a
/// second walk of the index and, past an `OFFSET`, a document read per skipped entry.
///
/// With `total` (a [`count_sql`]), each row starts with that count: an uncorrelated
/// subquery, evaluated once by both databases, so a page and its total are one statement
/// and one snapshot (a read ahead of a page needs no transaction around it,
/// `store/postgres/ahead.rs`).
pub(crate) fn page_sql(
    dialect: Dialect,
    kind: Kind,
    q: &Query,
    clause: &str,
    pointed: Option<Pointed>,
    total: Option<&str>,
) -> Result<String, StoreError> {
    let (t, col) = (kind.table(), q.sort.0);
    kind.check_column(col)?;
    let dir = match q.sort.1 {
        Order::Asc => "ASC",
        Order::Desc => "DESC",
    };
    let key_dir = dialect.key_order(q.sort.1);
    let limit = q
        .limit
        .map_or_else(|| dialect.no_limit().to_owned(), |l| l.to_string());
    let (also, join) = match pointed {
        None => (String::new(), String::new()),
        Some(p) => {
            kind.check_column(p.via)?;
            p.kind.check_column(p.column)?;
            (
                format!(", pointed.id, pointed.{}", p.column),
                dialect.pointed(t, p),
            )
        }
    };
    let total = total.map_or_else(String::new, |count| format!("({count}), "));
    // Read direct, the page is named `t` and carries the columns the rest reads.
    let (carried, page, rows, matched) = if read_direct(q) {
        let via = pointed.map_or_else(String::new, |p| format!(", {}", p.via));
        (format!(", doc{via}"), t, String::new(), String::new())
    } else {
        let (rows, matched) = dialect.by_id(t, pointed);
        (String::new(), "page", rows, matched)
    };
    Ok(format!(
        "SELECT {total}{doc}{also} FROM \
         (SELECT id AS page_id, {col} AS page_key{carried} FROM {from}{clause} \
          ORDER BY {col} {key_dir}, id {dir} LIMIT {limit} OFFSET {off}) AS {page} \
         {rows}{join}{matched} \
         ORDER BY {page}.page_key {key_dir}, {page}.page_id {dir}",
        doc = dialect.json_text(&format!("{t}.doc")),
        from = dialect.from(kind, &q.conds),
        off = q.offset,
    ))
}

/// Whether [`page_sql`] reads `q`'s documents in its walk of the index: when it skips no
/// more entries than it keeps, each skipped one costing a document visit and each kept
/// one saving a primary-key descent. A read of every match (no limit) from the start is
/// one walk.
fn read_direct(q: &Query) -> bool {
    q.limit.map_or(q.offset == 0, |limit| q.offset <= limit)
}

/// A row of `(id, text column)`.
fn id_and_value(row: Vec<Cell>) -> Result<(String, Option<String>), StoreError> {
    let mut cells = row.into_iter();
    let id = cells.next().unwrap_or(Cell::Null).text()?;
    Ok((id, text_or_none(cells.next())))
}

/// A text cell's text; `None` for anything else (`NULL`, no cell).
fn text_or_none(cell: Option<Cell>) -> Option<String> {
    match cell {
        Some(Cell::Text(v)) => Some(v),
        _ => None,
    }
}

fn ms(v: u64) -> Arg {
    Arg::Int(i64::try_from(v).unwrap_or(i64::MAX))
}

fn count_of(n: Option<i64>) -> u64 {
    u64::try_from(n.unwrap_or(0)).unwrap_or_default()
}

/// How many documents of `kind` match `conds`, with the arguments of `clause` (their
/// [`where_clause`]): with none, the trigger-kept tally (migration 2), not a scan (the
/// organization is the clause's first argument; the table a literal of ours).
pub(crate) fn count_sql(dialect: Dialect, kind: Kind, conds: &[Cond], clause: &str) -> String {
    let t = kind.table();
    if conds.is_empty() {
        return format!(
            "SELECT n FROM tallies WHERE org = {} AND tbl = '{t}'",
            dialect.mark(1)
        );
    }
    format!("SELECT COUNT(*) FROM {t}{clause}")
}

/// The integer of the first row's first cell; `None` without a row or for NULL (an
/// aggregate over no rows).
fn first_int_of(rows: Vec<Vec<Cell>>) -> Result<Option<i64>, StoreError> {
    match rows
        .into_iter()
        .next()
        .and_then(|row| row.into_iter().next())
    {
        Some(Cell::Null) | None => Ok(None),
        Some(cell) => cell.int().map(Some),
    }
}

/// An organization's last event number (NULL: none yet), in neutral marks.
const LAST_EVENT: &str = "SELECT MAX(sequence) FROM events WHERE org = {1}";

/// What a transaction has read that its later statements need not read again. It lives
/// as long as the transaction: across the writers of a group (`postgres/group.rs`), put
/// back as it was before a writer whose savepoint is rolled back.
#[derive(Clone, Debug, Default)]
pub(crate) struct Memory {
    /// An organization's last event number, once read: the next ones are counted here.
    last_event: Option<(String, u64)>,
    /// An organization's own document as read (`None` inside: it has none); forgotten
    /// when an organization is written.
    org_doc: Option<(String, Option<String>)>,
}

/// The one [`Tx`] of both stores.
pub(crate) struct SqlTx<C> {
    pub(crate) conn: C,
    /// A member or an organization was written ([`super::MemberEpoch`]).
    pub(crate) members: bool,
    /// What this transaction has read so far.
    pub(crate) memory: Memory,
}

impl<C: Driver> SqlTx<C> {
    pub(crate) fn new(conn: C) -> Self {
        Self::resume(conn, Memory::default())
    }

    /// A transaction's next part, with what its earlier parts read.
    pub(crate) fn resume(conn: C, memory: Memory) -> Self {
        Self {
            conn,
            members: false,
            memory,
        }
    }

    const D: Dialect = C::DIALECT;

    /// `sql` with `{1}`, `{2}`, ... replaced by this dialect's marks and `{jN}` by its
    /// JSON marks: the fixed statements below are written once with neutral marks.
    fn fixed(sql: &str) -> String {
        let mut out = String::with_capacity(sql.len() + 16);
        let mut rest = sql;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let close = open + rest[open..].find('}').unwrap_or(0);
            let inner = &rest[open + 1..close];
            match inner.strip_prefix('j') {
                Some(n) => out.push_str(&Self::D.json_mark(n.parse().unwrap_or(0))),
                None if inner == "doc" => out.push_str(&Self::D.json_text("doc")),
                None if inner == "result" => out.push_str(&Self::D.json_text("result")),
                None => out.push_str(&Self::D.mark(inner.parse().unwrap_or(0))),
            }
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        out
    }

    fn first_text(&mut self, sql: &str, args: &[Arg]) -> Result<Option<String>, StoreError> {
        Ok(self.conn.texts(sql, args)?.into_iter().next())
    }

    /// The integer of the first row's first column; `None` without a row or for NULL (an
    /// aggregate over no rows).
    fn first_int(&mut self, sql: &str, args: &[Arg]) -> Result<Option<i64>, StoreError> {
        first_int_of(self.conn.rows(sql, args)?)
    }
}

impl<C: Driver> Tx for SqlTx<C> {
    fn get_raw(&mut self, kind: Kind, org: &str, id: &str) -> Result<Option<String>, StoreError> {
        // Every call reads its organization's settings: once per transaction.
        let own = kind == Kind::Organization && id == org;
        if own
            && let Some((known, doc)) = &self.memory.org_doc
            && known == org
        {
            return Ok(doc.clone());
        }
        let sql = Self::fixed(&format!(
            "SELECT {{doc}} FROM {} WHERE org = {{1}} AND id = {{2}}",
            kind.table()
        ));
        let args = [Arg::Text(org.to_owned()), Arg::Text(id.to_owned())];
        let doc = self.first_text(&sql, &args)?;
        if own {
            self.memory.org_doc = Some((org.to_owned(), doc.clone()));
        }
        Ok(doc)
    }

    fn put(&mut self, kind: Kind, org: &str, doc: &Value) -> Result<(), StoreError> {
        self.members |= changes_membership(kind);
        if kind == Kind::Organization {
            self.memory.org_doc = None;
        }
        if kind == Kind::Event
            && let Some((known, last)) = &mut self.memory.last_event
            && known == org
        {
            // An event numbered by its writer: the count goes on from the larger.
            *last = (*last).max(doc["sequence"].as_u64().unwrap_or(0));
        }
        let (id, created) = identity(doc)?;
        let cols = kind.columns();
        let mut args = Vec::with_capacity(4 + cols.len());
        args.extend([
            Arg::Text(org.to_owned()),
            Arg::Text(id.to_owned()),
            Arg::Text(created.to_owned()),
            Arg::Text(doc.to_string()),
        ]);
        for c in cols {
            args.push(Arg::of(doc.get(c.name).unwrap_or(&Value::Null), c.ty));
        }
        self.conn.defer(&upsert_sql(Self::D, kind), args)
    }

    fn delete(&mut self, kind: Kind, org: &str, id: &str) -> Result<bool, StoreError> {
        self.members |= changes_membership(kind);
        if kind == Kind::Organization {
            self.memory.org_doc = None;
        }
        let sql = Self::fixed(&format!(
            "DELETE FROM {} WHERE org = {{1}} AND id = {{2}}",
            kind.table()
        ));
        let args = [Arg::Text(org.to_owned()), Arg::Text(id.to_owned())];
        Ok(self.conn.execute(&sql, &args)? > 0)
    }

    fn find_raw(&mut self, kind: Kind, org: &str, q: &Query) -> Result<Vec<String>, StoreError> {
        let (clause, args) = where_clause(Self::D, kind, org, &q.conds)?;
        let sql = page_sql(Self::D, kind, q, &clause, None, None)?;
        self.conn.texts(&sql, &args.list)
    }

    fn column_by_id(
        &mut self,
        kind: Kind,
        org: &str,
        ids: &[&str],
        column: &'static str,
    ) -> Result<Vec<(String, Option<String>)>, StoreError> {
        kind.check_column(column)?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let conds = [Cond::In(
            "id",
            ids.iter().map(|&id| Value::from(id)).collect(),
        )];
        let (clause, args) = where_clause(Self::D, kind, org, &conds)?;
        let sql = format!("SELECT id, {column} FROM {}{clause}", kind.table());
        self.conn
            .rows(&sql, &args.list)?
            .into_iter()
            .map(id_and_value)
            .collect()
    }

    fn next_event_sequence(&mut self, org: &str) -> Result<u64, StoreError> {
        let last = match &self.memory.last_event {
            Some((known, last)) if known == org => *last,
            _ => {
                let sql = Self::fixed(LAST_EVENT);
                count_of(self.first_int(&sql, &[Arg::Text(org.to_owned())])?)
            }
        };
        self.memory.last_event = Some((org.to_owned(), last + 1));
        Ok(last + 1)
    }

    fn count(&mut self, kind: Kind, org: &str, conds: &[Cond]) -> Result<u64, StoreError> {
        let (clause, args) = where_clause(Self::D, kind, org, conds)?;
        let sql = count_sql(Self::D, kind, conds, &clause);
        Ok(count_of(self.first_int(&sql, &args.list)?))
    }

    fn page_raw(
        &mut self,
        kind: Kind,
        org: &str,
        q: &Query,
        pointed: Option<Pointed>,
    ) -> Result<RawPage, StoreError> {
        let (clause, args) = where_clause(Self::D, kind, org, &q.conds)?;
        let count = count_sql(Self::D, kind, &q.conds, &clause);
        let page = page_sql(Self::D, kind, q, &clause, pointed, Some(&count))?;
        let rows = self.conn.rows(&page, &args.list)?;
        let total = match rows.first() {
            // Every row carries the total (`NULL`: no tally yet, none stored).
            Some(row) => match row.first() {
                Some(&Cell::Int(n)) => count_of(Some(n)),
                Some(Cell::Null) | None => 0,
                Some(other) => {
                    return Err(StoreError(format!("a page's total: {other:?}")));
                }
            },
            // An empty first page: nothing matches. Past the last page (or a page of no
            // rows) the total is asked alone.
            None if q.offset == 0 && q.limit != Some(0) => 0,
            None => count_of(self.first_int(&count, &args.list)?),
        };
        let mut out = RawPage {
            total,
            ..RawPage::default()
        };
        for row in rows {
            let mut cells = row.into_iter().skip(1);
            out.rows.push(cells.next().unwrap_or(Cell::Null).text()?);
            // The pointed id is `NULL` when the row points to nothing.
            if let Some(id) = text_or_none(cells.next()) {
                out.pointed.push((id, text_or_none(cells.next())));
            }
        }
        // Rows that point to one document name it once.
        out.pointed.sort_unstable();
        out.pointed.dedup();
        Ok(out)
    }

    fn organizations(&mut self) -> Result<Vec<String>, StoreError> {
        self.conn
            .texts("SELECT id FROM organizations ORDER BY id", &[])
    }

    fn recall(&mut self, org: &str, key: &str) -> Result<Option<Remembered>, StoreError> {
        let sql = Self::fixed(
            "SELECT tool, digest, {result}, at_ms FROM idempotency WHERE org = {1} AND key = {2}",
        );
        let args = [Arg::Text(org.to_owned()), Arg::Text(key.to_owned())];
        let Some(row) = self.conn.rows(&sql, &args)?.into_iter().next() else {
            return Ok(None);
        };
        let mut cells = row.into_iter();
        let mut next = || cells.next().unwrap_or(Cell::Null);
        Ok(Some(Remembered {
            tool: next().text()?,
            digest: next().text()?,
            result: parse_doc(next().text()?)?,
            at_ms: u64::try_from(next().int()?).unwrap_or_default(),
        }))
    }

    fn remember(&mut self, org: &str, key: &str, r: &Remembered) -> Result<(), StoreError> {
        let sql = Self::fixed(
            "INSERT INTO idempotency (org, key, tool, digest, result, at_ms) \
             VALUES ({1}, {2}, {3}, {4}, {j5}, {6}) ON CONFLICT (org, key) DO NOTHING",
        );
        let args = [
            Arg::Text(org.to_owned()),
            Arg::Text(key.to_owned()),
            Arg::Text(r.tool.clone()),
            Arg::Text(r.digest.clone()),
            Arg::Text(r.result.to_string()),
            ms(r.at_ms),
        ];
        self.conn.defer(&sql, args.into())
    }

    fn rewrite_remembered(
        &mut self,
        org: &str,
        key: &str,
        result: &Value,
    ) -> Result<(), StoreError> {
        let sql = Self::fixed("UPDATE idempotency SET result = {j1} WHERE org = {2} AND key = {3}");
        let args = [
            Arg::Text(result.to_string()),
            Arg::Text(org.to_owned()),
            Arg::Text(key.to_owned()),
        ];
        self.conn.defer(&sql, args.into())
    }

    fn forget_before(&mut self, before_ms: u64) -> Result<u64, StoreError> {
        let sql = Self::fixed("DELETE FROM idempotency WHERE at_ms < {1}");
        self.conn.execute(&sql, &[ms(before_ms)])
    }

    fn grant_get(&mut self, kind: &str, id: &str) -> Result<Option<Value>, StoreError> {
        let sql = Self::fixed("SELECT {doc} FROM oauth_grants WHERE kind = {1} AND id = {2}");
        let args = [Arg::Text(kind.to_owned()), Arg::Text(id.to_owned())];
        self.first_text(&sql, &args)?.map(parse_doc).transpose()
    }

    fn grant_put(
        &mut self,
        kind: &str,
        id: &str,
        doc: &Value,
        expires_ms: Option<u64>,
    ) -> Result<(), StoreError> {
        let sql = Self::fixed(
            "INSERT INTO oauth_grants (kind, id, doc, expires_ms) VALUES ({1}, {2}, {j3}, {4}) \
             ON CONFLICT (kind, id) DO UPDATE SET doc = excluded.doc, expires_ms = excluded.expires_ms",
        );
        let args = [
            Arg::Text(kind.to_owned()),
            Arg::Text(id.to_owned()),
            Arg::Text(doc.to_string()),
            expires_ms.map_or(Arg::Null, ms),
        ];
        self.conn.defer(&sql, args.into())
    }

    fn grant_rewrite(&mut self, kind: &str, id: &str, doc: &Value) -> Result<bool, StoreError> {
        let sql = Self::fixed("UPDATE oauth_grants SET doc = {j1} WHERE kind = {2} AND id = {3}");
        let args = [
            Arg::Text(doc.to_string()),
            Arg::Text(kind.to_owned()),
            Arg::Text(id.to_owned()),
        ];
        Ok(self.conn.execute(&sql, &args)? > 0)
    }

    fn grant_sweep(&mut self, before_ms: u64) -> Result<u64, StoreError> {
        let sql = Self::fixed("DELETE FROM oauth_grants WHERE expires_ms < {1}");
        self.conn.execute(&sql, &[ms(before_ms)])
    }

    fn link_message(
        &mut self,
        channel: &str,
        message_id: &str,
        org: &str,
        delivery_id: &str,
    ) -> Result<(), StoreError> {
        let sql = Self::fixed(
            "INSERT INTO provider_messages (channel, message_id, org, delivery_id) VALUES ({1}, {2}, {3}, {4}) \
             ON CONFLICT (channel, message_id) DO UPDATE SET org = excluded.org, delivery_id = excluded.delivery_id",
        );
        let args = [channel, message_id, org, delivery_id].map(|a| Arg::Text(a.to_owned()));
        self.conn.defer(&sql, args.into())
    }

    fn message_owner(
        &mut self,
        channel: &str,
        message_id: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        let sql = Self::fixed(
            "SELECT org, delivery_id FROM provider_messages WHERE channel = {1} AND message_id = {2}",
        );
        let args = [
            Arg::Text(channel.to_owned()),
            Arg::Text(message_id.to_owned()),
        ];
        let Some(row) = self.conn.rows(&sql, &args)?.into_iter().next() else {
            return Ok(None);
        };
        let mut cells = row.into_iter();
        let mut next = || cells.next().unwrap_or(Cell::Null).text();
        Ok(Some((next()?, next()?)))
    }
}
